// Helpers shared by the viz tests: an output folder under the build tree, file reading,
// and an XML well-formedness check (our own minimal parser, plus xmllint when installed).
#pragma once

#include <string>
#include <vector>

namespace kvlens::viz::test {

// <build>/tests/viz/output/<name>, the folder created on first use.
std::string outputPath(const std::string& name);
std::string readFile(const std::string& path);

// Checks that xml is one well-formed XML document: an optional prolog, a single root
// element, properly nested and matching tags, quoted attributes without duplicates, and
// only the five predefined or numeric entities. Returns "" when well formed, else what
// is wrong. Also collects the text content of all elements into *text when given.
std::string xmlProblem(const std::string& xml, std::string* text = nullptr);
// Runs `xmllint --noout` on the file when xmllint was found at configure time; returns
// true when it accepts the file or when xmllint is unavailable (*ran says which).
bool xmllintAccepts(const std::string& path, bool* ran);

}  // namespace kvlens::viz::test

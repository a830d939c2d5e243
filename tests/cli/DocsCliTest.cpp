// The README and docs/ cannot drift from the code: every generated block equals what
// the binary prints now, every command has its --help block in docs/cli.md, every
// relative link (and its #anchor) resolves, every page is linked from the README, and
// the README stays short.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli/CliHarness.h"

namespace {

namespace fs = std::filesystem;
using kvlens::test::runKvlens;
using kvlens::test::slurp;

const fs::path kSource = KVLENS_SOURCE_DIR;

// README.md and every page under docs/ (Markdown only).
std::vector<fs::path> pages() {
    std::vector<fs::path> out{kSource / "README.md"};
    for (const auto& e : fs::recursive_directory_iterator(kSource / "docs"))
        if (e.is_regular_file() && e.path().extension() == ".md") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::string shown(const fs::path& p) { return fs::relative(p, kSource).string(); }

struct Block {
    std::string args;     // what follows "kvlens " in the marker
    std::string content;  // between the fences
    int line;             // of the marker
};

// `<!-- generated: kvlens ARGS -->`, a ```text fence, its lines, ```, `<!-- end generated -->`.
std::vector<Block> generatedBlocks(const fs::path& page) {
    std::vector<Block> out;
    std::istringstream in(slurp(page.string()));
    std::string line;
    int n = 0;
    const std::string open = "<!-- generated: kvlens ";
    while (std::getline(in, line)) {
        ++n;
        if (line.rfind(open, 0) != 0) continue;
        Block b;
        b.line = n;
        b.args = line.substr(open.size(), line.size() - open.size() - std::string(" -->").size());
        std::string fence;
        std::getline(in, fence);
        ++n;
        EXPECT_EQ(fence, "```text") << shown(page) << ":" << n << ": a generated block opens with ```text";
        bool closed = false;
        while (std::getline(in, line)) {
            ++n;
            if (line == "```") {
                closed = true;
                break;
            }
            b.content += line + "\n";
        }
        std::string end;
        std::getline(in, end);
        ++n;
        EXPECT_TRUE(closed && end == "<!-- end generated -->")
            << shown(page) << ":" << b.line << ": the block of `kvlens " << b.args << "` is not closed";
        out.push_back(b);
    }
    return out;
}

TEST(Docs, GeneratedBlocksEqualWhatTheBinaryPrints) {
    int blocks = 0;
    for (const fs::path& page : pages()) {
        for (const Block& b : generatedBlocks(page)) {
            ++blocks;
            const auto r = runKvlens(b.args);
            ASSERT_EQ(r.exitCode, 0) << shown(page) << ":" << b.line << ": kvlens " << b.args << ": " << r.err;
            EXPECT_EQ(b.content, r.out) << shown(page) << ":" << b.line << ": the block of `kvlens " << b.args
                                        << "` differs from what the binary prints: run scripts/regen-docs";
        }
    }
    EXPECT_GE(blocks, 16);  // the README's method list, kvlens --help and one per command
}

// Every command `kvlens --help` lists has its `--help` block in docs/cli.md, so a new
// command's flags are documented by the build itself.
TEST(Docs, EveryCommandHasItsHelpInTheCliPage) {
    const auto r = runKvlens("--help");
    ASSERT_EQ(r.exitCode, 0);
    std::set<std::string> documented;
    for (const Block& b : generatedBlocks(kSource / "docs" / "cli.md")) documented.insert(b.args);
    std::istringstream in(r.out.substr(r.out.find("commands:")));
    std::string line;
    std::getline(in, line);
    int commands = 0;
    std::smatch m;
    const std::regex command(R"(^  ([a-z][a-z-]+) )");
    while (std::getline(in, line) && !line.empty()) {
        if (!std::regex_search(line, m, command)) continue;
        ++commands;
        EXPECT_TRUE(documented.count(m[1].str() + " --help"))
            << "docs/cli.md has no block `<!-- generated: kvlens " << m[1] << " --help -->`: add one and run scripts/regen-docs";
    }
    EXPECT_GE(commands, 14);
}

// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
std::string anchorOf(const std::string& heading) {
    std::string out;
    for (unsigned char c : heading) {
        if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80)
            out += char(std::tolower(c));
        else if (c == ' ')
            out += '-';
    }
    return out;
}

std::set<std::string> anchorsOf(const fs::path& page) {
    std::set<std::string> out;
    std::istringstream in(slurp(page.string()));
    bool fence = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("```", 0) == 0) fence = !fence;
        if (fence || line.empty() || line[0] != '#') continue;
        const size_t text = line.find_first_not_of('#');
        if (text == std::string::npos || line[text] != ' ') continue;
        std::string a = anchorOf(line.substr(text + 1));
        std::string unique = a;
        for (int i = 1; out.count(unique); ++i) unique = a + "-" + std::to_string(i);
        out.insert(unique);
    }
    return out;
}

TEST(Docs, EveryRelativeLinkResolves) {
    // Markdown links and images, and the HTML <img src> / <a href> of the pages' figure tables.
    const std::regex link(R"re(\]\(([^)\s]+)\)|(?:src|href)="([^"]+)")re");
    int links = 0;
    for (const fs::path& page : pages()) {
        std::istringstream in(slurp(page.string()));
        bool fence = false;
        int n = 0;
        for (std::string line; std::getline(in, line);) {
            ++n;
            if (line.rfind("```", 0) == 0) fence = !fence;
            if (fence) continue;
            for (std::sregex_iterator it(line.begin(), line.end(), link), end; it != end; ++it) {
                const std::string target = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
                if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target.rfind("mailto:", 0) == 0)
                    continue;
                ++links;
                const size_t hash = target.find('#');
                const std::string file = target.substr(0, hash);
                const fs::path to = file.empty() ? page : (page.parent_path() / file).lexically_normal();
                const std::string where = shown(page) + ":" + std::to_string(n) + ": " + target;
                if (!fs::exists(to)) {
                    ADD_FAILURE() << where << ": no such file";
                    continue;
                }
                if (hash != std::string::npos && to.extension() == ".md") {
                    EXPECT_TRUE(anchorsOf(to).count(target.substr(hash + 1))) << where << ": no such heading";
                }
            }
        }
    }
    EXPECT_GE(links, 30);
}

TEST(Docs, EveryPageIsLinkedFromTheReadmeAndTheReadmeIsShort) {
    const std::string readme = slurp((kSource / "README.md").string());
    for (const fs::path& page : pages()) {
        if (page.filename() == "README.md" || page.parent_path() != kSource / "docs") continue;
        EXPECT_NE(readme.find("](docs/" + page.filename().string() + ")"), std::string::npos)
            << "README.md does not link " << shown(page);
    }
    EXPECT_LE(std::count(readme.begin(), readme.end(), '\n'), 200) << "README.md: keep it under 200 lines; move detail to docs/";
}

}  // namespace

// Test helpers: output paths, file reading, XML checking.
#include "VizTestSupport.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace kvlens::viz::test {

std::string outputPath(const std::string& name) {
    std::string dir = KVLENS_VIZ_TEST_OUTPUT_DIR;
    ::mkdir(dir.c_str(), 0755);
    return dir + "/" + name;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

namespace {

bool isNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool isNameChar(char c) {
    return isNameStart(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
}

// Checks the entity references in s (text or attribute value) and appends the decoded text.
std::string checkText(const std::string& s, std::string* out) {
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '<') return "'<' inside text or attribute";
        if (s[i] != '&') {
            if (out) *out += s[i];
            continue;
        }
        size_t semi = s.find(';', i);
        if (semi == std::string::npos) return "unterminated entity";
        std::string e = s.substr(i + 1, semi - i - 1);
        static const std::set<std::string> known = {"amp", "lt", "gt", "quot", "apos"};
        bool numeric = e.size() > 1 && e[0] == '#';
        if (!known.count(e) && !numeric) return "unknown entity &" + e + ";";
        if (out) *out += e == "amp" ? "&" : e == "lt" ? "<" : e == "gt" ? ">" : e == "quot" ? "\"" : e == "apos" ? "'" : "?";
        i = semi;
    }
    return "";
}

}  // namespace

std::string xmlProblem(const std::string& xml, std::string* text) {
    size_t i = 0;
    std::vector<std::string> stack;
    bool rootSeen = false, rootClosed = false;
    auto skipSpace = [&] {
        while (i < xml.size() && std::isspace(static_cast<unsigned char>(xml[i]))) ++i;
    };
    if (xml.compare(0, 5, "<?xml") == 0) {
        size_t end = xml.find("?>");
        if (end == std::string::npos) return "unterminated XML declaration";
        i = end + 2;
    }
    while (i < xml.size()) {
        if (xml[i] != '<') {
            size_t next = xml.find('<', i);
            std::string chunk = xml.substr(i, next == std::string::npos ? std::string::npos : next - i);
            if (stack.empty()) {
                for (char c : chunk)
                    if (!std::isspace(static_cast<unsigned char>(c))) return "text outside the root element";
            } else {
                std::string problem = checkText(chunk, text);
                if (!problem.empty()) return problem;
            }
            i = next == std::string::npos ? xml.size() : next;
            continue;
        }
        if (xml.compare(i, 4, "<!--") == 0) {
            size_t end = xml.find("-->", i);
            if (end == std::string::npos) return "unterminated comment";
            i = end + 3;
            continue;
        }
        if (xml.compare(i, 2, "</") == 0) {
            i += 2;
            size_t start = i;
            while (i < xml.size() && isNameChar(xml[i])) ++i;
            std::string name = xml.substr(start, i - start);
            skipSpace();
            if (i >= xml.size() || xml[i] != '>') return "malformed end tag </" + name;
            ++i;
            if (stack.empty() || stack.back() != name) return "end tag </" + name + "> does not match";
            stack.pop_back();
            if (stack.empty()) rootClosed = true;
            continue;
        }
        if (xml.compare(i, 2, "<!") == 0 || xml.compare(i, 2, "<?") == 0) return "unexpected markup declaration";
        ++i;
        if (i >= xml.size() || !isNameStart(xml[i])) return "malformed start tag";
        size_t start = i;
        while (i < xml.size() && isNameChar(xml[i])) ++i;
        std::string name = xml.substr(start, i - start);
        if (stack.empty()) {
            if (rootSeen) return "a second root element <" + name + ">";
            rootSeen = true;
        }
        std::set<std::string> attrs;
        while (true) {
            size_t before = i;
            skipSpace();
            if (i >= xml.size()) return "unterminated tag <" + name;
            if (xml[i] == '>') { ++i; stack.push_back(name); break; }
            if (xml.compare(i, 2, "/>") == 0) {
                i += 2;
                if (stack.empty()) rootClosed = true;
                break;
            }
            if (i == before) return "no space before an attribute in <" + name;
            size_t a = i;
            if (!isNameStart(xml[i])) return "malformed attribute in <" + name;
            while (i < xml.size() && isNameChar(xml[i])) ++i;
            std::string attr = xml.substr(a, i - a);
            if (!attrs.insert(attr).second) return "duplicate attribute " + attr + " in <" + name;
            skipSpace();
            if (i >= xml.size() || xml[i] != '=') return "attribute " + attr + " without a value";
            ++i;
            skipSpace();
            if (i >= xml.size() || (xml[i] != '"' && xml[i] != '\'')) return "unquoted attribute " + attr;
            char q = xml[i++];
            size_t end = xml.find(q, i);
            if (end == std::string::npos) return "unterminated attribute " + attr;
            std::string problem = checkText(xml.substr(i, end - i), nullptr);
            if (!problem.empty()) return problem + " in attribute " + attr;
            i = end + 1;
        }
        if (rootClosed && !stack.empty()) return "content after the root element";
    }
    if (!rootSeen) return "no root element";
    if (!stack.empty()) return "unclosed element <" + stack.back() + ">";
    return "";
}

bool xmllintAccepts(const std::string& path, bool* ran) {
    std::string tool = KVLENS_XMLLINT;
    *ran = !tool.empty();
    if (tool.empty()) return true;
    std::string cmd = "'" + tool + "' --noout '" + path + "' 2>/dev/null";
    return std::system(cmd.c_str()) == 0;
}

}  // namespace kvlens::viz::test

// kvlens methods: the method table (core/Methods) as text, JSON or Markdown.
#include <cstdio>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "core/Error.h"
#include "core/Methods.h"

namespace kvlens {

namespace {

const char* kHelp =
    "usage: kvlens methods [--json | --markdown]\n"
    "  every compression method: its family, decode form, kvpress counterpart and what it keeps;\n"
    "  --json: the whole table (knobs, needs, what it keeps, paper, how it differs from kvpress) and\n"
    "  the knob table (flag, JSON key, default, help); --markdown: the page docs/methods.md.\n";

}  // namespace

int runMethods(const std::vector<std::string>& argv) {
    CommandLine args("methods", argv, {}, {"--json", "--markdown", "--help"});
    if (args.has("--help")) {
        std::fputs(kHelp, stdout);
        return 0;
    }
    if (args.has("--json") && args.has("--markdown")) throw Error("methods: --json and --markdown are exclusive");
    const std::string out = args.has("--json")       ? methods::tableJson()
                            : args.has("--markdown") ? methods::tableMarkdown()
                                                     : methods::tableText();
    std::fputs(out.c_str(), stdout);
    return 0;
}

}  // namespace kvlens

// SnapKV and PyramidKV against the independent float64 oracle in
// testdata/kv-oracle: votes, pooled scores, layer budgets and kept positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/compress/presses/PyramidKvPress.h"

namespace kvlens {
namespace {

using nlohmann::json;

const std::string kOracleDir = std::string(KVLENS_SHARED_DIR) + "/testdata/kv-oracle/";
const std::string kTag = "L4_H8_KV8_D16_T300_W32";

// Flattens a nested JSON array into a fp32 tensor, insisting on `shape`.
void flatten(const json& j, const std::vector<int64_t>& shape, size_t dim,
             std::vector<float>& out) {
    if (!j.is_array() || int64_t(j.size()) != shape[dim]) {
        throw std::runtime_error("test vector array of dimension " + std::to_string(dim) +
                                 " is not of length " + std::to_string(shape[dim]));
    }
    for (const json& e : j) {
        if (dim + 1 == shape.size()) {
            out.push_back(e.get<float>());
        } else {
            flatten(e, shape, dim + 1, out);
        }
    }
}

at::Tensor tensorOf(const json& j, const std::vector<int64_t>& shape) {
    std::vector<float> flat;
    flatten(j, shape, 0, flat);
    return at::tensor(flat, at::kFloat).reshape(shape);
}

struct Oracle {
    json expected;
    std::shared_ptr<Capture> capture;
    int64_t L = 0, H = 0, KV = 0, D = 0, T = 0, W = 0;
};

// Parsed once for all tests (4 x 0.8 MB of JSON); null when the test vectors are absent.
const Oracle* oracle() {
    static const std::unique_ptr<Oracle> loaded = []() -> std::unique_ptr<Oracle> {
        std::ifstream in(kOracleDir + "expected_" + kTag + ".json");
        if (!in) return nullptr;
        auto o = std::make_unique<Oracle>();
        o->expected = json::parse(in);
        const json& e = o->expected;
        o->L = e.at("n_layers");
        o->H = e.at("n_q_heads");
        o->KV = e.at("n_kv_heads");
        o->D = e.at("head_dim");
        o->T = e.at("seq_len");
        o->W = e.at("window");
        std::vector<at::Tensor> q, k, v;
        for (const json& name : e.at("input_files")) {
            std::ifstream f(kOracleDir + name.get<std::string>());
            if (!f) return nullptr;
            const json in = json::parse(f);
            q.push_back(tensorOf(in.at("q_window"), {o->H, o->W, o->D}));
            k.push_back(tensorOf(in.at("keys"), {o->KV, o->T, o->D}));
            v.push_back(tensorOf(in.at("values"), {o->KV, o->T, o->D}));
        }
        o->capture = Capture::fromTensors(q, k, v);
        return o;
    }();
    return loaded.get();
}

#define REQUIRE_ORACLE()        \
    const Oracle* o = oracle(); \
    if (!o) GTEST_SKIP() << "test vectors not found in " << kOracleDir

// Relative 1e-5 on values of order 1e-2..1; the floor keeps near-zero entries from
// demanding more than fp32 can give.
void expectClose(const std::vector<float>& ours, const json& want, const std::string& what) {
    ASSERT_EQ(ours.size(), want.size()) << what;
    int bad = 0;
    for (size_t j = 0; j < ours.size(); ++j) {
        const double w = want[j].get<double>();
        if (std::abs(double(ours[j]) - w) > 1e-5 * std::abs(w) + 1e-7) {
            if (++bad <= 3)
                ADD_FAILURE() << what << " position " << j << ": " << ours[j] << " vs " << w;
        }
    }
    EXPECT_EQ(bad, 0) << what;
}

TEST(OracleParity, VotesMatchInBothGqaModes) {
    REQUIRE_ORACLE();
    // MHA: the group mean over one query head is that head, so both modes must match the oracle.
    const json& want = o->expected.at("votes").at("query_head");
    for (GqaMode mode : {GqaMode::QueryHead, GqaMode::KvHead}) {
        for (int64_t l = 0; l < o->L; ++l) {
            const presses::HeadScores votes = presses::windowVotes(*o->capture, l, o->W, mode);
            ASSERT_EQ(int64_t(votes.size()), o->H);
            for (int64_t h = 0; h < o->H; ++h) {
                expectClose(votes[h], want[l][h],
                            std::string(gqaModeName(mode)) + " layer " + std::to_string(l) +
                                " head " + std::to_string(h));
            }
        }
    }
}

TEST(OracleParity, PooledScoresMatch) {
    REQUIRE_ORACLE();
    const json& pooled = o->expected.at("pooled").at("query_head");
    ASSERT_EQ(pooled.size(), 4u);
    for (const auto& [name, want] : pooled.items()) {
        const Pooling pooling = name.rfind("maxpool", 0) == 0 ? Pooling::Max : Pooling::Avg;
        const int64_t kernel = std::stoi(name.substr(name.find("_k") + 2));
        for (int64_t l = 0; l < o->L; ++l) {
            const presses::HeadScores votes =
                presses::windowVotes(*o->capture, l, o->W, GqaMode::QueryHead);
            for (int64_t h = 0; h < o->H; ++h) {
                expectClose(presses::pool1d(votes[h], kernel, pooling), want[l][h],
                            name + " layer " + std::to_string(l) + " head " + std::to_string(h));
            }
        }
    }
}

// The 16 cases of the oracle, named by their case_id.
std::vector<std::string> caseIds() {
    std::vector<std::string> ids;
    for (const char* pool : {"avgpool", "maxpool"})
        for (int kernel : {5, 7})
            for (int mcp : {64, 128})
                for (const char* method : {"snapkv", "pyramidkv"}) {
                    ids.push_back(std::string(method) + "_query_head_" + pool + "_k" +
                                  std::to_string(kernel) + "_mcp" + std::to_string(mcp));
                }
    return ids;
}

TEST(OracleParity, CaseListIsTheExpectedSixteen) {
    REQUIRE_ORACLE();
    std::set<std::string> have;
    for (const json& c : o->expected.at("cases")) have.insert(c.at("case_id").get<std::string>());
    const std::vector<std::string> ids = caseIds();
    EXPECT_EQ(have, std::set<std::string>(ids.begin(), ids.end()));
}

class OracleCase : public testing::TestWithParam<std::string> {};

GqaMode gqaModeOf(const std::string& oracleName) {
    if (oracleName == "query_head") return GqaMode::QueryHead;
    if (oracleName == "kv_head_mean") return GqaMode::KvHead;
    ADD_FAILURE() << "unknown gqa_mode " << oracleName;
    return GqaMode::KvHead;
}

TEST_P(OracleCase, BudgetsAndKeptPositionsMatch) {
    REQUIRE_ORACLE();
    const json* found = nullptr;
    for (const json& c : o->expected.at("cases"))
        if (c.at("case_id") == GetParam()) found = &c;
    ASSERT_NE(found, nullptr) << "no case " << GetParam() << " in the oracle";
    const json& c = *found;

    PressParams p;
    p.method = c.at("method");
    p.gqa = gqaModeOf(c.at("gqa_mode"));
    p.pooling = c.at("pooling") == "maxpool" ? Pooling::Max : Pooling::Avg;
    p.kernel = c.at("kernel_size");
    p.budget = c.at("max_capacity_prompt");
    p.window = c.at("window");
    if (p.method == "pyramidkv") {
        p.schedule = PyramidSchedule::Factory;
        p.beta = c.at("beta");
    }
    const Selection s = Press::create(p.method)->select(*o->capture, p);

    const std::vector<int64_t> prefixBudget = c.at("per_layer_prefix_budget");
    ASSERT_EQ(int64_t(prefixBudget.size()), o->L);
    if (p.method == "pyramidkv") {
        EXPECT_EQ(PyramidKvPress::prefixBudgets(o->L, o->T, p.window, p.budget, p.beta, p.schedule),
                  prefixBudget);
    }
    ASSERT_EQ(s.layers(), o->L);
    const json& pooledAll = o->expected.at("pooled").at("query_head");
    const json& pooled =
        pooledAll.at(c.at("pooling").get<std::string>() + "_k" + std::to_string(p.kernel));
    for (int64_t l = 0; l < o->L; ++l) {
        EXPECT_EQ(s.layerBudgets[l], prefixBudget[l] + p.window) << "layer " << l;
        ASSERT_EQ(int64_t(s.kept[l].size()), int64_t(c.at("heads_per_layer"))) << "layer " << l;
        for (size_t h = 0; h < s.kept[l].size(); ++h) {
            SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(h));
            const std::vector<int32_t>& kept = s.kept[l][h];
            const json& boundary = c.at("boundary")[l][h];
            if (!boundary.at("ambiguous").get<bool>()) {
                EXPECT_EQ(kept, c.at("kept_indices")[l][h].get<std::vector<int32_t>>());
                continue;
            }
            // A tie at the cut: any set obeying the rule is right. The oracle's scores are
            // rounded to 10 decimals, kth_score the same way, so compare to within that.
            const double kth = boundary.at("kth_score"), eps = 1e-9;
            const int64_t prefix = o->T - p.window;
            std::vector<char> in(o->T, 0);
            for (int32_t pos : kept) in[pos] = 1;
            int64_t prefixCount = 0;
            for (int32_t pos : kept) prefixCount += pos < prefix;
            EXPECT_EQ(prefixCount, prefixBudget[l]);
            for (int64_t t = prefix; t < o->T; ++t) EXPECT_TRUE(in[t]) << "window position " << t;
            for (int64_t j = 0; j < prefix; ++j) {
                const double score = pooled[l][h][j];
                if (in[j]) {
                    EXPECT_GE(score, kth - eps) << "kept position " << j;
                } else {
                    EXPECT_LE(score, kth + eps) << "dropped position " << j;
                }
            }
        }
    }
    // With one query head per KV head the other mode must choose the very same positions.
    PressParams other = p;
    other.gqa = p.gqa == GqaMode::QueryHead ? GqaMode::KvHead : GqaMode::QueryHead;
    EXPECT_EQ(Press::create(p.method)->select(*o->capture, other).kept, s.kept);
}

INSTANTIATE_TEST_SUITE_P(Cases, OracleCase, testing::ValuesIn(caseIds()),
                         [](const testing::TestParamInfo<std::string>& info) {
                             return info.param;
                         });

}  // namespace
}  // namespace kvlens

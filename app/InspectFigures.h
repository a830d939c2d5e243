// The pictures and tables `kvlens inspect` writes into its output folder, each
// chart with its CSV beside it:
//   funnel.svg        per layer: effective attended positions, positions holding
//                     90% of the attention, the method's budget; sink and local mass
//                     (layer means; funnel_heads.csv has every head's figures)
//   selection_L<l>.png heads x prompt positions of layer l, kept positions marked;
//                     selection_overview.png all layers stacked; their CSVs list each
//                     head's kept positions
//   attention_L<l>_H<h>.png the full attention map of one head (log colour scale,
//                     tile max when zoomed out); its CSV holds the tiles of the
//                     level drawn, or a coarser one of at most 65536 tiles
//   hitrate.svg       per layer, the hit rate of every method at the budget
//   overlap.svg       per layer, Jaccard overlap of each method with the chosen one
//   memory.svg        per layer, full vs kept KV bytes
#pragma once

#include <string>
#include <vector>

#include "app/InspectData.h"

namespace kvlens {

class InspectFigures {
public:
    InspectFigures(const InspectData& data, std::string outDir);

    // Each writes its files and returns their paths.
    std::vector<std::string> writeFunnel() const;
    std::vector<std::string> writeSelection() const;
    std::vector<std::string> writeAttention() const;
    std::vector<std::string> writeHitRate() const;
    std::vector<std::string> writeOverlap() const;
    std::vector<std::string> writeMemory() const;

private:
    std::string path(const std::string& name) const;

    const InspectData& data_;
    std::string dir_;
};

}  // namespace kvlens

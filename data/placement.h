// data/placement.h — where each token of a packed window goes among the sp ranks of a ring.
#pragma once
#include <stdint.h>

// PLACE_ZIGZAG: the sample cut into 2·sp chunks, rank j holding chunks j and 2·sp−1−j (the documents play no
// part). PLACE_COST: documents placed by their attention cost (docs/data.md#placement): every rank the same
// number of tokens and about the same attention pairs; a short document whole on one rank, a long one split
// zigzag over the ranks it needs. A one-document sample comes out exactly as the zigzag.
typedef enum { PLACE_ZIGZAG, PLACE_COST } Placement;

// layout (sp, T/sp): rank j's global positions, ascending, at layout + j·T/sp; together a permutation of
// 0..T−1. ds: the nd document starts of the sample (ds[0] = 0, ascending). T is a multiple of 2·sp (sp = 1:
// the identity). Deterministic: every rank of a ring computes the same layout from the same starts.
void place_sample(Placement p, const int32_t *ds, int nd, int T, int sp, int32_t *layout);
// Exact attention work per rank of a layout under document masks: pairs[j] (sp) = the (query, key) pairs rank
// j's rows compute (key in the same document, at or before the query's position).
void place_pairs(const int32_t *layout, const int32_t *ds, int nd, int T, int sp, int64_t *pairs);

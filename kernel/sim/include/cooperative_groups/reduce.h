// cooperative_groups/reduce.h (simulator stand-in): cg::reduce over a tile of up to 32
// threads and the operators of the real header. The reduction is the real header's
// shuffle-xor butterfly, in its order, so that float results match a GPU's bit for bit (for
// 32-bit integers a GPU uses redux.sync, whose result is the same).
#pragma once

#include <cooperative_groups.h>

namespace cooperative_groups {

template <typename Ty>
struct plus {
    Ty operator()(Ty a, Ty b) const { return a + b; }
};
template <typename Ty>
struct less {
    Ty operator()(Ty a, Ty b) const { return (b < a) ? b : a; }
};
template <typename Ty>
struct greater {
    Ty operator()(Ty a, Ty b) const { return (a < b) ? b : a; }
};
template <typename Ty>
struct bit_and {
    Ty operator()(Ty a, Ty b) const { return a & b; }
};
template <typename Ty>
struct bit_or {
    Ty operator()(Ty a, Ty b) const { return a | b; }
};
template <typename Ty>
struct bit_xor {
    Ty operator()(Ty a, Ty b) const { return a ^ b; }
};

// Every thread of the tile gets the reduction of the tile's values. A tile of more than a warp
// reduces each warp by the butterfly, then every thread combines the warps' results, in warp
// order, from memory its block shares, between two of the tile's barriers.
template <unsigned int Size, typename ParentT, typename TyVal, typename TyOp>
auto reduce(const thread_block_tile<Size, ParentT> &group, TyVal &&val, TyOp &&op, ::sim::Caller at = {})
    -> decltype(op(val, val)) {
    auto out = val;
    if constexpr (Size <= 32) {
        for (int mask = Size >> 1; mask > 0; mask >>= 1) out = op(out, group.shfl_xor(out, mask, at));
    } else {
        for (int mask = 16; mask > 0; mask >>= 1) out = op(out, __shfl_xor_sync(0xFFFFFFFFu, out, mask, 32, at));
        // The block's shared memory: a thread-local, the block's own copy in a cluster.
        static thread_local decltype(out) warps_tls[32];
        auto &warps = ::sim::block_shared(warps_tls);
        const unsigned rank = details::cta_rank(), first = rank / Size * (Size / 32);
        if (details::laneid() == 0) warps[rank / 32] = out;
        group.sync(at);
        out = warps[first];
        for (unsigned w = 1; w < Size / 32; ++w) out = op(out, warps[first + w]);
        group.sync(at);
    }
    return out;
}

}  // namespace cooperative_groups

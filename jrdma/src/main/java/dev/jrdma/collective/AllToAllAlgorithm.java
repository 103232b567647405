package dev.jrdma.collective;

/** How {@link PeerGroup#allToAll} moves the blocks. */
public enum AllToAllAlgorithm {
    /**
     * rdma_lib's: through rank 0, one member at a time. Every member writes its whole send
     * region to rank 0; rank 0 then serves the members in rank order, writing to each the blocks
     * meant for it and waiting for them before the next member. n - 1 transfers in and n - 1 out
     * at rank 0, one outstanding at a time on the way out: simple and gentle on a small star,
     * bound by rank 0's link as the group grows.
     */
    SEQUENTIAL,
    /**
     * Pairwise exchange: every member writes the block meant for each other member straight into
     * that member's receive region, all at once, in the order rank + 1, rank + 2, ... (mod n) so
     * that the members do not all start on the same target. The default.
     */
    PAIRWISE
}

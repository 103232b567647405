package dev.jrdma.device;

/**
 * What a device can do, as far as jrdma uses it. Limits are the device's maxima; a connection
 * asks for less.
 *
 * @param maxQpWr           work requests per queue (ibv max_qp_wr)
 * @param maxSge            scatter/gather entries per request
 * @param maxCqe            entries per completion queue
 * @param maxQpRdAtomic     RDMA reads / atomics a QP may have outstanding as responder (max_qp_rd_atom)
 * @param maxQpInitRdAtomic ... as initiator (max_qp_init_rd_atom)
 * @param maxMrSize         largest registration in bytes
 * @param atomics           8-byte compare-and-swap and fetch-and-add
 * @param maskedAtomics     masked compare-and-swap / fetch-and-add in hardware
 * @param srq               shared receive queues
 * @param odp               on-demand paging
 */
public record DeviceCapabilities(int maxQpWr, int maxSge, int maxCqe, int maxQpRdAtomic, int maxQpInitRdAtomic,
                                 long maxMrSize, boolean atomics, boolean maskedAtomics, boolean srq, boolean odp) {
}

/**
 * The {@code verbs} provider: real RDMA on any rdma-core device (mlx5, efa, irdma, rxe, siw ...)
 * through libibverbs and librdmacm. Availability and the device inventory
 * ({@code VerbsProvider}, {@code VerbsDevices}), the device with its protection domain and
 * async events, memory registration, completion queues and channels, RC queue pairs moved
 * through INIT, RTR and RTS by rdma_cm, and connection management. Internal: not exported.
 *
 * <p>Who touches what: {@code VerbsConnectionManager} (its ids, and the accepted connections
 * awaiting their RTU with their deadlines) is the thread that drives its {@code processEvents},
 * IO thread 0; an accepted endpoint may be closed on its connection's IO thread, which removes
 * it from the manager's concurrent map of ids and sets its volatile closed flag, by which the
 * manager's list of those awaiting their RTU lets it go.
 */
package dev.jrdma.provider.verbs;

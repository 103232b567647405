/**
 * The {@code verbs} provider: real RDMA on any rdma-core device (mlx5, efa, irdma, rxe, siw ...)
 * through libibverbs and librdmacm. Availability and the device inventory
 * ({@code VerbsProvider}, {@code VerbsDevices}), the device with its protection domain and
 * async events, memory registration, completion queues and channels, RC queue pairs moved
 * through INIT, RTR and RTS by rdma_cm, and connection management. Internal: not exported.
 */
package dev.jrdma.provider.verbs;

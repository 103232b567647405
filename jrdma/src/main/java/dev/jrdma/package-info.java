/**
 * jrdma's API: RDMA from Java, on any provider.
 *
 * <p>Start with {@link dev.jrdma.Rdma}: {@code Rdma.open()} (or its {@link dev.jrdma.Rdma.Builder
 * builder}: provider, device, completion mode, IO threads, limits) gives the registered memory
 * ({@link dev.jrdma.LocalRegion}, from {@code allocate} or {@code register}), servers
 * ({@link dev.jrdma.RdmaServer}, from {@code listen}) and connections
 * ({@link dev.jrdma.Connection}, from {@code connect}). A connection carries every operation of
 * an RC queue pair: send/receive ({@link dev.jrdma.Message}), write, write-with-immediate, read,
 * compare-and-swap, fetch-and-add, their masked forms, atomic write and flush, each as a
 * {@link java.util.concurrent.CompletableFuture}, a zero-allocation completion handler or a
 * blocking {@code *Sync} call, alone or in a one-doorbell {@link dev.jrdma.Batch}. A peer's
 * memory is a {@link dev.jrdma.RemoteRegion}, made from the descriptor the peer sent.
 *
 * <p>Every posted operation completes exactly once: with success, with an error naming what
 * went wrong ({@code dev.jrdma.exceptions}), or flushed when its connection ends. What a
 * connection is configured with ({@link dev.jrdma.ConnectionConfig}), what it tells on the way
 * ({@link dev.jrdma.ConnectionListener}, {@link dev.jrdma.ReconnectPolicy}) and what the device
 * tells ({@link dev.jrdma.DeviceEvent}) are here too.
 */
package dev.jrdma;

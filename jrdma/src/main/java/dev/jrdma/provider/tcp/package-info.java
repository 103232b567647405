/**
 * The {@code tcp} provider: RC semantics over TCP sockets for hosts without an RDMA device. The
 * target's IO thread applies writes, reads, atomics and immediates to its registered memory
 * after checking key, bounds and access, as an RDMA NIC does; every byte from the peer is
 * hostile input with a budget. {@code TcpQueuePair} is a connection's life cycle,
 * {@code TcpRequester} its send queue, {@code TcpResponder} the peer's requests,
 * {@code TcpFrameDescriptor} and {@code TcpHandshake} the wire. The same-host seam that shm
 * plugs into ({@code TcpSameHost}, {@code SameHostLink}) is here too.
 *
 * <p><b>Who touches what.</b> A queue pair's receive side (responder, parked frames, the rings'
 * consumer ends) belongs to the IO thread that polls its completion queue; its send side
 * (requester ring, transmitter) is shared by posting threads and that IO thread under the
 * queue pair's {@code txLock}. A completion queue rests ({@code TcpCompletionQueue.rest}) when
 * none of its queue pairs has anything to do: its IO thread then leaves it out of the passes,
 * and {@code TcpCompletionChannel} (the IO thread's epoll set) wakes it when one of its sockets
 * is ready; a post, an error asked for or a receive a parked SEND waits for wakes it from any
 * thread. So an IO pass costs O(connections with work), however many are idle:
 * <pre>
 *   poster ──post──▶ requester ──wakeIfResting──▶ IoThread.wake(source) ──▶ polled again
 *   peer ──bytes──▶ socket ──epoll──▶ TcpCompletionChannel.pollReadiness ──▶ (same)
 * </pre>
 * Internal: not exported.
 */
package dev.jrdma.provider.tcp;

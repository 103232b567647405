/**
 * The {@code tcp} provider: RC semantics over TCP sockets for hosts without an RDMA device. The
 * target's IO thread applies writes, reads, atomics and immediates to its registered memory
 * after checking key, bounds and access, as an RDMA NIC does; every byte from the peer is
 * hostile input with a budget. {@code TcpQueuePair} is a connection's life cycle,
 * {@code TcpRequester} its send queue, {@code TcpResponder} the peer's requests,
 * {@code TcpFrameDescriptor} and {@code TcpHandshake} the wire. The same-host seam that shm
 * plugs into ({@code TcpSameHost}, {@code SameHostLink}) is here too. Internal: not exported.
 */
package dev.jrdma.provider.tcp;

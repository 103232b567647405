/**
 * jrdma: RDMA for Java 25 through the Foreign Function and Memory API.
 *
 * <p>The API is {@code dev.jrdma} ({@link dev.jrdma.Rdma} to start), with
 * {@code dev.jrdma.exceptions} (what can go wrong, by type), {@code dev.jrdma.collective}
 * (peer groups: broadcast, all-to-all) and {@code dev.jrdma.device} (what the machine's RDMA
 * devices are). Nothing else is exported: the providers, the provider interface, the bindings to
 * libibverbs and librdmacm, the memory pool and the IO threads are the library's own.
 *
 * <p>A client in a few lines: it connects, takes the server's memory descriptor from the
 * connection's private data, writes into that memory one-sided and adds to a counter there.
 * {@snippet :
 * try (Rdma rdma = Rdma.open();                           // verbs if a device is up, else shm or tcp
 *      Connection c = rdma.connect(new InetSocketAddress("10.0.0.2", 7471));
 *      LocalRegion buf = rdma.allocate(4096)) {           // registered memory
 *     RemoteRegion peer = RemoteRegion.fromDescriptor(c.peerPrivateData());
 *     buf.segment().fill((byte) 42);
 *     c.writeSync(buf, peer.slice(0, 4096));              // one-sided: no CPU of the peer
 *     long before = c.fetchAndAddSync(peer.slice(4096, 8), 1);
 * }
 * }
 * The server side, the other operations (send and receive, read, compare-and-swap, masked
 * atomics, flush, batches) and the completion styles (futures, handlers, blocking) are on
 * {@link dev.jrdma.Rdma} and {@link dev.jrdma.Connection}. Start the JVM with
 * {@code --enable-native-access=dev.jrdma} on the module path ({@code ALL-UNNAMED} on the
 * class path).
 *
 * <p>Layers, bottom up: {@code dev.jrdma.exceptions} and {@code dev.jrdma.device}, {@code dev.jrdma.os}
 * (libc: errno, sockets, epoll, eventfd, mmap), then {@code dev.jrdma.provider.verbs.ffi}
 * (bindings to libibverbs and librdmacm) and {@code dev.jrdma.spi} (the provider interface), the
 * providers, {@code dev.jrdma.memory} and {@code dev.jrdma.runtime}, the public API, and
 * {@code dev.jrdma.collective} (peer groups and collectives, on the public API only).
 * {@code dev.jrdma.jfr} (the Flight Recorder events) uses nothing of the library, and the memory
 * pool and the API record their events through it.
 * {@code LayeringTest} holds every package to this.
 */
module dev.jrdma {
    requires jdk.jfr;

    exports dev.jrdma;
    exports dev.jrdma.exceptions;
    exports dev.jrdma.collective;
    exports dev.jrdma.device;

    uses dev.jrdma.spi.Provider;
    provides dev.jrdma.spi.Provider with dev.jrdma.provider.verbs.VerbsProvider,
            dev.jrdma.provider.tcp.TcpProvider, dev.jrdma.provider.shm.ShmProvider;
}

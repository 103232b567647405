package dev.jrdma.provider.tcp;

import dev.jrdma.os.Sockets;
import dev.jrdma.spi.CmListener;

import java.net.InetSocketAddress;

/** A listening TCP socket of a {@link TcpConnectionManager}. */
final class TcpCmListener implements CmListener {
    final int fd;
    private final TcpConnectionManager manager;
    private final InetSocketAddress address;
    private boolean closed;
    /** Accepting ran out of fds or memory: how long it waits now, and until when (the manager's thread). */
    long acceptBackoffMs;
    long resumeAt;

    TcpCmListener(TcpConnectionManager manager, int fd, InetSocketAddress address) {
        this.manager = manager;
        this.fd = fd;
        this.address = address;
    }

    @Override
    public InetSocketAddress address() {
        return address;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        manager.forget(fd);
        Sockets.close(fd);
    }
}

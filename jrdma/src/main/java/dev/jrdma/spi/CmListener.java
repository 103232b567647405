package dev.jrdma.spi;

import java.net.InetSocketAddress;

/** A listening endpoint. */
public interface CmListener extends AutoCloseable {
    /** The bound address, with the port chosen when 0 was asked. */
    InetSocketAddress address();

    @Override
    void close();
}

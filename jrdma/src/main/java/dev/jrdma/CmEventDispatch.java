package dev.jrdma;

import dev.jrdma.engine.admission.AcceptPolicy;
import dev.jrdma.engine.admission.SourcePenalties;
import dev.jrdma.engine.io.IoThreads;
import dev.jrdma.runtime.IoThread;
import dev.jrdma.spi.CmEndpoint;
import dev.jrdma.spi.CmEventHandler;
import dev.jrdma.spi.CmListener;
import dev.jrdma.spi.Device;

/**
 * The rdma_cm events of one {@link Rdma}, handed to the connection each is about: a connection
 * request is looked at by the accept policy, then accepted on the next IO thread or rejected with
 * the policy's reason; the peers' offences go to the policy.
 *
 * <p>Threads: IO thread 0 (the connection manager's) only, as is the accept policy.
 */
final class CmEventDispatch implements CmEventHandler {
    private final Rdma rdma;
    private final LiveObjects live;
    private final IoThreads io;
    private final Device device;
    /** Which connection requests the servers take (and who failed or misused one lately). */
    private final AcceptPolicy acceptPolicy;

    CmEventDispatch(Rdma rdma, LiveObjects live, IoThreads io, Device device, AcceptPolicy acceptPolicy) {
        this.rdma = rdma;
        this.live = live;
        this.io = io;
        this.device = device;
        this.acceptPolicy = acceptPolicy;
    }

    @Override
    public void onConnectRequest(CmListener listener, CmEndpoint request, byte[] privateData) {
        RdmaServer server = live.serverOf(listener);
        if (server == null || server.isClosed() || live.isClosed()) {
            request.reject(Handshake.rejection("the server is closing"));
            request.close();
            return;
        }
        Handshake peer = Handshake.decode(privateData);
        String refusal = acceptPolicy.refusal(request.remoteAddress(), server.config.authTokenRef(), peer.token(),
                live.connectionCount(), live::fromSource);
        if (refusal != null) {
            request.reject(Handshake.rejection(refusal));
            request.close();
            return;
        }
        IoThread t = io.pick();
        Connection c = new Connection(rdma, t, server.config, request.remoteAddress(), server);
        live.add(c);
        c.life.accept(request, peer, device, io.channelOf(t));
    }

    @Override
    public void onEstablished(CmEndpoint endpoint, byte[] privateData) {
        if (endpoint.attachment() instanceof Connection c) {
            c.life.onEstablished(privateData);
        }
    }

    @Override
    public void onRejected(CmEndpoint endpoint, int status, byte[] privateData) {
        if (endpoint.attachment() instanceof Connection c) {
            c.life.onRejected(status, privateData);
        }
    }

    @Override
    public void onError(CmEndpoint endpoint, String what, int status) {
        if (endpoint.attachment() instanceof Connection c) {
            c.life.onConnectError(what, status);
        }
    }

    @Override
    public void onDisconnected(CmEndpoint endpoint) {
        if (endpoint.attachment() instanceof Connection c) {
            c.io.execute(c.life::peerDisconnected);
        }
    }

    @Override
    public byte[] rejection(String reason) {
        return Handshake.rejection(reason);
    }

    @Override
    public void onPeerOffence(CmEndpoint endpoint, String what) {
        if (endpoint.attachment() instanceof Connection c && c.server != null) {
            acceptPolicy.offended(endpoint.remoteAddress());   // only a server's peers: a client chose its server
        }
    }

    /** The accept policy's record of failed attempts and offences by source, or null when off (tests read its counts). IO thread 0. */
    SourcePenalties penalties() {
        return acceptPolicy.penalties();
    }
}

package dev.jrdma.jfr;

import java.net.InetSocketAddress;

/**
 * What the library calls to record its events. Each method makes its event only when a recording
 * wants it ({@code shouldCommit}): with none running, a call is a check of a flag, and the event
 * object is not allocated once the JIT has compiled the caller (escape analysis). The arguments
 * are plain values, so that this package needs nothing of the library.
 */
public final class JrdmaEvents {
    private JrdmaEvents() {
    }

    /** A connection to (or from) {@code remote} is established. */
    public static void connectionEstablished(InetSocketAddress remote, String provider, String device, int qpNumber,
                                             boolean accepted) {
        ConnectionEstablishedEvent e = new ConnectionEstablishedEvent();
        if (e.shouldCommit()) {
            e.remoteAddress = String.valueOf(remote);
            e.provider = provider;
            e.device = device;
            e.queuePairNumber = qpNumber;
            e.accepted = accepted;
            e.commit();
        }
    }

    /** A connection was released; {@code reason}: why it closed (null: closed by this side). */
    public static void connectionClosed(InetSocketAddress remote, String provider, String reason, long completed,
                                        long failed) {
        ConnectionClosedEvent e = new ConnectionClosedEvent();
        if (e.shouldCommit()) {
            e.remoteAddress = String.valueOf(remote);
            e.provider = provider;
            e.reason = reason;
            e.operationsCompleted = completed;
            e.operationsFailed = failed;
            e.commit();
        }
    }

    /** Connecting failed ({@code whileConnecting}), or an established connection went to error, with {@code cause}. */
    public static void connectionFailed(InetSocketAddress remote, String provider, boolean whileConnecting,
                                        Throwable cause) {
        ConnectionFailedEvent e = new ConnectionFailedEvent();
        if (e.shouldCommit()) {
            e.remoteAddress = String.valueOf(remote);
            e.provider = provider;
            e.whileConnecting = whileConnecting;
            e.exception = cause.getClass().getName();
            e.message = cause.getMessage();
            e.commit();
        }
    }

    /** Memory was registered; {@code what}: a region of the application ("register", ...) or "pool chunk". */
    public static void regionRegistered(long address, long length, String access, String what, String device) {
        RegionRegisteredEvent e = new RegionRegisteredEvent();
        if (e.shouldCommit()) {
            e.address = address;
            e.length = length;
            e.access = access;
            e.what = what;
            e.device = device;
            e.commit();
        }
    }

    /** A remote key was made for a region or slice; {@code scope}: whom it serves. */
    public static void regionExposed(long address, long length, int rkey, String access, String scope) {
        RegionExposedEvent e = new RegionExposedEvent();
        if (e.shouldCommit()) {
            e.key(address, length, rkey);
            e.access = access;
            e.scope = scope;
            e.commit();
        }
    }

    /** A remote key was revoked, for {@code reason}. */
    public static void regionRevoked(long address, long length, int rkey, String reason) {
        RegionRevokedEvent e = new RegionRevokedEvent();
        if (e.shouldCommit()) {
            e.key(address, length, rkey);
            e.reason = reason;
            e.commit();
        }
    }

    /** A lease of {@code leaseMillis} ran out and its key was revoked. */
    public static void leaseEnded(long address, long length, int rkey, long leaseMillis) {
        LeaseEndedEvent e = new LeaseEndedEvent();
        if (e.shouldCommit()) {
            e.key(address, length, rkey);
            e.leaseMillis = leaseMillis;
            e.commit();
        }
    }

    /** {@code operation} failed as its retries ran out; {@code rnr}: for want of a receive at the peer. */
    public static void retryExceeded(InetSocketAddress remote, String operation, boolean rnr, int retries) {
        RetryExceededEvent e = new RetryExceededEvent();
        if (e.shouldCommit()) {
            e.remoteAddress = String.valueOf(remote);
            e.operation = operation;
            e.kind = rnr ? "RNR" : "transport";
            e.retries = retries;
            e.commit();
        }
    }

    /** A sampled operation took {@code nanos} from post to completion. */
    public static void operationLatency(InetSocketAddress remote, String operation, long bytes, long nanos) {
        OperationLatencyEvent e = new OperationLatencyEvent();
        if (e.shouldCommit()) {
            e.remoteAddress = String.valueOf(remote);
            e.operation = operation;
            e.bytes = bytes;
            e.latency = nanos;
            e.commit();
        }
    }
}

package dev.jrdma;

import dev.jrdma.exceptions.RemoteAccessException;
import dev.jrdma.exceptions.UnsupportedCapabilityException;
import dev.jrdma.spi.AccessFlags;

/**
 * What can be checked before posting, so that bad input fails its operation only and the
 * connection stays usable. Messages are built only on failure: this runs on every post.
 */
final class OperationChecks {
    private OperationChecks() {
    }

    /**
     * Checks {@code op} on {@code buf} (null for atomics and flushes) and {@code remote} (null for
     * messages) against what the regions and the peer allow; throws naming what is wrong.
     */
    static void check(Operation op, LocalRegion buf, RemoteRegion remote, Handshake peer) {
        boolean local = op.shape == Operation.Shape.MESSAGE || op.shape == Operation.Shape.TRANSFER;
        if (local && buf == null) {
            throw new NullPointerException(op.label + ": the local region");
        }
        if (remote == null && op.shape != Operation.Shape.MESSAGE) {
            throw new NullPointerException(op.label + ": the remote region");
        }
        if (buf != null) {
            checkLocal(op, buf);
        }
        if (op.shape == Operation.Shape.MESSAGE && peer.known() && buf.length() > peer.receiveBufferSize()) {
            throw new IllegalArgumentException(op.label + " of " + buf.length() + " bytes exceeds the peer's receive buffer of "
                    + peer.receiveBufferSize() + " bytes (its ConnectionConfig.receiveBufferSize)");
        }
        if (remote != null && op.shape != Operation.Shape.FLUSH) {
            checkRemote(op, op.atomic ? 8 : buf.length(), remote);
        }
    }

    private static void checkLocal(Operation op, LocalRegion buf) {
        if (buf.isClosed()) {
            throw new IllegalArgumentException(op.label + ": the local region is closed");
        }
        if (buf.length() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(op.label + ": " + buf.length() + " bytes is more than one operation carries (2^31-1)");
        }
        if (op == Operation.READ && !buf.allows(AccessFlags.LOCAL_WRITE)) {
            throw new IllegalArgumentException(op.label + ": the local region needs LOCAL_WRITE to receive read data");
        }
    }

    private static void checkRemote(Operation op, long need, RemoteRegion remote) {
        if (need > remote.length()) {
            throw new IllegalArgumentException(op.label + " of " + need + " bytes exceeds the remote region's "
                    + remote.length() + " bytes (" + remote + ")");
        }
        if (!remote.allows(op.access)) {
            throw new RemoteAccessException(op.label + " to " + remote, "not attempted: the region's descriptor does not grant "
                    + op.access);
        }
        long leaseEnd = remote.leaseEndMillis();
        if (leaseEnd != 0 && System.currentTimeMillis() >= leaseEnd) {
            throw new RemoteAccessException(op.label + " to " + remote, "not attempted: its lease ended at "
                    + java.time.Instant.ofEpochMilli(leaseEnd));
        }
        if (op.atomic && (remote.address() & 7) != 0) {
            throw new IllegalArgumentException(op.label + ": the remote address 0x" + Long.toHexString(remote.address())
                    + " is not 8-byte aligned, as atomics require");
        }
    }

    /** A flush of {@code remote}: it must grant REMOTE_READ, and PERSISTENT needs a peer that declared pmem. */
    static void checkFlush(RemoteRegion remote, FlushType type, String deviceName) {
        if (type == FlushType.PERSISTENT && !remote.directWriteToPmem()) {
            throw new UnsupportedCapabilityException("PERSISTENT flush", deviceName,
                    "the owner of " + remote + " did not declare direct write to persistent memory; "
                            + "only VISIBILITY can be promised towards it");
        }
        if (!remote.allows(Access.REMOTE_READ)) {
            throw new RemoteAccessException("flush of " + remote, "not attempted: a flush is a read after the writes, "
                    + "and the region's descriptor does not grant REMOTE_READ");
        }
    }
}

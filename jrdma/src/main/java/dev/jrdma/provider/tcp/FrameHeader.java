package dev.jrdma.provider.tcp;

import java.lang.foreign.MemorySegment;

/**
 * One frame's header, decoded ({@link TcpFrameDescriptor} has the layout): the frame being read,
 * or one kept with a parked request. A mutable record, reused, so that reading a frame allocates
 * nothing; fields are as they came from the peer, unchecked (the reader checks them).
 */
final class FrameHeader {
    byte type;
    int flags, status, length, rkey, imm;
    long seq, addr, compareAdd, swap;

    /** Decodes the header at {@code at} of {@code buf}. */
    void decode(MemorySegment buf, long at) {
        type = TcpFrameDescriptor.type(buf, at);
        flags = TcpFrameDescriptor.flags(buf, at);
        status = TcpFrameDescriptor.status(buf, at);
        length = TcpFrameDescriptor.length(buf, at);
        seq = TcpFrameDescriptor.sequence(buf, at);
        addr = TcpFrameDescriptor.remoteAddress(buf, at);
        rkey = TcpFrameDescriptor.rkey(buf, at);
        imm = TcpFrameDescriptor.imm(buf, at);
        compareAdd = TcpFrameDescriptor.compareAdd(buf, at);
        swap = TcpFrameDescriptor.swap(buf, at);
    }

    void copyFrom(FrameHeader o) {
        type = o.type;
        flags = o.flags;
        status = o.status;
        length = o.length;
        seq = o.seq;
        addr = o.addr;
        rkey = o.rkey;
        imm = o.imm;
        compareAdd = o.compareAdd;
        swap = o.swap;
    }

    boolean isRequest() {
        return type < TcpFrameDescriptor.ACK;
    }

    boolean has(int flag) {
        return (flags & flag) != 0;
    }
}

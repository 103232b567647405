package dev.jrdma.netty;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

import java.io.ByteArrayOutputStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;

/** Collects what a channel reads, and how it ended. */
final class Collector extends ChannelInboundHandlerAdapter {
    final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    final LinkedBlockingQueue<Object> events = new LinkedBlockingQueue<>();
    final CompletableFuture<Throwable> caught = new CompletableFuture<>();
    final CompletableFuture<Void> inactive = new CompletableFuture<>();
    volatile int expect;
    final CompletableFuture<byte[]> all = new CompletableFuture<>();

    /** A collector that completes {@link #all} once {@link #expect} is set and that many bytes came. */
    Collector() {
        this(Integer.MAX_VALUE);
    }

    /** A collector whose {@link #all} completes once {@code expect} bytes came. */
    Collector(int expect) {
        this.expect = expect;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf b = (ByteBuf) msg;
        try {
            byte[] a = new byte[b.readableBytes()];
            b.readBytes(a);
            synchronized (bytes) {
                bytes.writeBytes(a);
                if (bytes.size() >= expect) {
                    all.complete(bytes.toByteArray());
                }
            }
        } finally {
            b.release();
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        events.add(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        caught.complete(cause);
        ctx.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        caught.complete(null);
        inactive.complete(null);
    }
}

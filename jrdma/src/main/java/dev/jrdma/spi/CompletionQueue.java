package dev.jrdma.spi;

/**
 * A completion queue. {@link #poll} and {@link #arm} belong to one thread (the IO thread that
 * owns it: the one polling it, one at a time); they allocate nothing. {@link #close} is its
 * owner's, once nothing polls it any more.
 */
public interface CompletionQueue extends AutoCloseable {
    /**
     * Hands up to {@code max} completions to {@code sink}; returns the work done: those
     * completions, plus, for a software provider, the frames of the peer's it served that
     * complete nothing here (the peer's WRITEs, READs and atomics: on verbs the device serves
     * them). 0: nothing happened, and the poller may back off. A poller counts served frames as
     * work: it neither sleeps nor stops spinning while it serves, and a pass that served
     * something is followed by another (what a pass leaves for the next, such as an ACK waiting
     * for a frame to ride on, is sent).
     */
    int poll(CompletionSink sink, int max);

    /**
     * {@link #poll} of a queue that several queue pairs share ({@link Device#sharedCompletionQueueDepth}):
     * each completion names its queue pair. The default: unsupported (a provider whose queues are
     * not shared).
     */
    default int pollShared(SharedCompletionSink sink, int max) {
        throw new UnsupportedOperationException("completion queues of " + getClass().getSimpleName() + " are not shared");
    }

    /** Asks for an event on the channel at the next completion (no-op without a channel). */
    void arm();

    /**
     * Asked by its IO thread after a {@link #poll} that found nothing: true when this queue and
     * its queue pairs have nothing to do until {@code wake} runs, which the provider then calls
     * once, from any thread, as soon as they have (bytes on a socket, a post, an error, a
     * receive a parked message waits for); false when they have work, a timer running, or the
     * provider cannot tell (a device that completes without telling: verbs). While it rests, its
     * IO thread does not poll it (a pass costs O(queues with work)). The default: never rests.
     */
    default boolean rest(Runnable wake) {
        return false;
    }

    @Override
    void close();
}

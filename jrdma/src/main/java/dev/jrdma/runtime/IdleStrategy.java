package dev.jrdma.runtime;

/**
 * What an IO loop of its own does after a pass that found no work, as Agrona's
 * {@code IdleStrategy}: spin, yield, or sleep on its event fds until something happens. One object
 * per loop (a strategy may count its idle passes), called on the loop's thread only.
 */
interface IdleStrategy {
    /** The loop's sleep: arms its sources, looks once more, then waits in poll(2) for at most {@code maxMillis}. */
    interface Sleep {
        void sleep(int maxMillis);
    }

    /** After a pass that did no work. */
    void idle(Sleep sleep);

    /** After a pass that did work: the next idle pass is the first again. */
    void reset();
}

package dev.jrdma.engine.io;

import dev.jrdma.runtime.IdleWait;

/**
 * What IO an {@code Rdma} runs, as its builder asked: threads of its own, none (INLINE: the
 * application polls), one owner thread (single-threaded), or loops that the application's threads
 * drive.
 *
 * @param threads        IO threads of its own; 0: INLINE
 * @param loops          IO loops the application drives (then no threads of its own); 0: none
 * @param singleThreaded INLINE with one owner: the thread that builds it
 * @param idle           how a thread of its own waits for work (the completion mode)
 * @param pollingOnly    nobody arms the completion channels or sleeps on them (INLINE, or POLLING)
 * @param cpus           the CPUs to pin IO thread i to ({@code cpus[i % cpus.length]}); empty: none
 */
public record IoPlan(int threads, int loops, boolean singleThreaded, IdleWait idle, boolean pollingOnly, int[] cpus) {
    /** {@return how many IO threads (or loops) there are: one at least, also when INLINE} */
    public int count() {
        return loops > 0 ? loops : Math.max(1, threads);
    }
}

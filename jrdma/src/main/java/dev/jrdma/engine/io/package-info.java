/**
 * IO setup: the IO threads (or loops) of an {@code Rdma}, one completion channel each, and the
 * connection manager served by IO thread 0 ({@code IoThreads}, made from an {@code IoPlan}).
 * Made and closed by the thread that builds and closes the {@code Rdma}; the arrays never change
 * after that, so any thread may pick a thread, find a channel or hand a task over. The connection
 * manager is used on IO thread 0 only, its control thread. Internal: not exported.
 */
package dev.jrdma.engine.io;

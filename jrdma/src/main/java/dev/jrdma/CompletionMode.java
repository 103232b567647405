package dev.jrdma;

/**
 * How an IO thread waits for completions. {@link Rdma.Builder#idleStrategy} chooses among more
 * ways (yielding, backing off, a spin budget of one's own); each mode is one of them.
 */
public enum CompletionMode {
    /** Busy-poll the completion queues: lowest latency, one core per IO thread. */
    POLLING,
    /** Arm the completion queues and sleep in poll(2) on the completion channel until an event. */
    EVENT,
    /** Poll while there is work; after an idle spin budget, arm and sleep as EVENT; poll again on wake-up. */
    ADAPTIVE
}

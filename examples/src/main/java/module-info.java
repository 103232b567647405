/**
 * jrdma's runnable examples (bin/jrdma-example): the API's tour, an echo server and client,
 * write-flush-read, and rdma_lib's all-to-all demo. A module of its own so that the tour runs on
 * the module path as a user's application would; on the class path it is read the same.
 */
module dev.jrdma.examples {
    requires dev.jrdma;
}

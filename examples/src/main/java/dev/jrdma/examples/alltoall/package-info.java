/** rdma_lib's demo (a server and two clients exchanging all-to-all) through {@code RdmaLib}, rdma_lib's API in Java. */
package dev.jrdma.examples.alltoall;

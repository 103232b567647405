/** The API's tour: a server process and a client that connects, echoes, writes, reads and runs atomics, checking each. */
package dev.jrdma.examples.tour;

/** Write, flush and read back: what {@code flush} promises about the peer's memory, shown end to end. */
package dev.jrdma.examples.flush;

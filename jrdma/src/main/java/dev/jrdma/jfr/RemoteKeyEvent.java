package dev.jrdma.jfr;

import jdk.jfr.DataAmount;
import jdk.jfr.Event;
import jdk.jfr.Label;

/** What the events about a remote key have in common: the memory it reaches, and the key. */
abstract class RemoteKeyEvent extends Event {
    @Label("Address")
    long address;
    @Label("Length")
    @DataAmount
    long length;
    @Label("Remote Key")
    int rkey;

    /** Sets the common fields; the caller then sets its own and commits. */
    final void key(long address, long length, int rkey) {
        this.address = address;
        this.length = length;
        this.rkey = rkey;
    }
}

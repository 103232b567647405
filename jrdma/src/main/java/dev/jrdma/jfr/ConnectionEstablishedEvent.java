package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A connection is up: its queue pair is ready to send. */
@Name("dev.jrdma.ConnectionEstablished")
@Label("Connection Established")
@Category({"jrdma"})
@Description("A connection is up: its queue pair is ready to send.")
final class ConnectionEstablishedEvent extends Event {
    @Label("Remote Address")
    String remoteAddress;
    @Label("Provider")
    String provider;
    @Label("Device")
    String device;
    @Label("Queue Pair Number")
    int queuePairNumber;
    @Label("Accepted")
    @Description("Accepted by a listener of this side, not connected from it")
    boolean accepted;
}

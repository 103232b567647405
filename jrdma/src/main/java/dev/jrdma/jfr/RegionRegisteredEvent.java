package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** Memory was registered with a device: a region of the application, or a chunk of the registered-memory pool. */
@Name("dev.jrdma.RegionRegistered")
@Label("Region Registered")
@Category({"jrdma"})
@Description("Memory was registered with a device: a region of the application, or a chunk of the registered-memory pool.")
final class RegionRegisteredEvent extends Event {
    @Label("Address")
    long address;
    @Label("Length")
    @DataAmount
    long length;
    @Label("Access")
    String access;
    @Label("What")
    String what;
    @Label("Device")
    String device;
}

package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Device events on a Soft-RoCE device this test makes for itself (a veth pair and rxe on it), so
 * that taking its port down and up leaves the suite's rxe0/rxe1 alone. The listener runs in a
 * child JVM ({@link #main}): librdmacm keeps a device open until its process ends, and the
 * device can only be deleted after that.
 */
@Tag("verbs")
class DeviceEventsVerbsTest {
    private static final String DEV = "rxeev", A = "vethev0", B = "vethev1";

    private static boolean run(long seconds, String... cmd) throws Exception {
        return Shell.tryRun(seconds, cmd) == null;
    }

    private static void must(String... cmd) throws Exception {
        Shell.run(cmd);
    }

    /** The child: opens the device with a listener, flaps the port, prints each event, exits. */
    public static void main(String[] args) throws Exception {
        LinkedBlockingQueue<DeviceEvent> events = new LinkedBlockingQueue<>();
        try (Rdma rdma = Rdma.builder().provider("verbs").device(DEV).onDeviceEvent(events::add).build()) {
            must("ip", "link", "set", A, "down");
            System.out.println("event " + events.poll(60, TimeUnit.SECONDS));
            must("ip", "link", "set", A, "up");
            System.out.println("event " + events.poll(60, TimeUnit.SECONDS));
        }
    }

    @Test
    void portDownAndUpReachTheDeviceEventListener() throws Exception {
        run(30, "rdma", "link", "delete", DEV);
        run(30, "ip", "link", "del", A);
        File out = File.createTempFile("events", ".log");
        try {
            must("ip", "link", "add", A, "type", "veth", "peer", "name", B);
            must("ip", "link", "set", A, "up");
            must("ip", "link", "set", B, "up");
            must("rdma", "link", "add", DEV, "type", "rxe", "netdev", A);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Path state = Path.of("/sys/class/infiniband/" + DEV + "/ports/1/state");
            while (!(Files.exists(state) && Files.readString(state).contains("ACTIVE")) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            Process child = VerbsTestAddresses.runChildJvm(DeviceEventsVerbsTest.class, out, 180);
            List<String> lines = Files.readAllLines(out.toPath()).stream().filter(l -> l.startsWith("event ")).toList();
            assertEquals(List.of(
                    "event " + new DeviceEvent(DEV, "IBV_EVENT_PORT_ERR", false, 1, -1, null),
                    "event " + new DeviceEvent(DEV, "IBV_EVENT_PORT_ACTIVE", false, 1, -1, null)),
                    lines, () -> {
                        try {
                            return Files.readString(out.toPath());
                        } catch (java.io.IOException e) {
                            return e.toString();
                        }
                    });
            assertEquals(0, child.exitValue());
        } finally {
            out.delete();
            run(60, "rdma", "link", "delete", DEV);
            run(30, "ip", "link", "del", A);
        }
    }
}

package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Rdma;
import dev.jrdma.device.Capability;
import dev.jrdma.device.DeviceInfo;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code jrdma devices -v} agrees with {@code ibv_devinfo -v} on real devices: every line jrdma
 * prints under an ibv_devinfo name has ibv_devinfo's value, device by device and port by port.
 */
@Tag("verbs")
class DevicesMatchIbvDevinfoTest {
    /** "device/port/key" → value, from either tool's output. */
    static Map<String, String> parse(String text) {
        Map<String, String> values = new LinkedHashMap<>();
        String device = "?";
        String port = "-";
        for (String line : text.split("\n")) {
            String trimmed = line.strip();
            int colon = trimmed.indexOf(':');
            if (trimmed.isEmpty() || colon < 0) {
                continue;
            }
            String key = trimmed.substring(0, colon).strip();
            String value = trimmed.substring(colon + 1).strip();
            if (key.startsWith("GID[")) {
                key = "GID[" + key.substring(4, key.length() - 1).strip() + "]";
            }
            switch (key) {
                case "hca_id" -> {
                    device = value;
                    port = "-";
                }
                case "port" -> port = value;
                default -> values.put(device + "/" + port + "/" + key, value);
            }
        }
        return values;
    }

    @Test
    void everySharedFieldAgrees() throws Exception {
        Process p = new ProcessBuilder("ibv_devinfo", "-v").redirectErrorStream(true).start();
        String reference = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), reference);

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"devices", "-v"}, new PrintStream(bytes, true, StandardCharsets.UTF_8), System.err);
        String ours = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, ours);

        Map<String, String> theirs = parse(reference);
        Map<String, String> mine = parse(ours);
        List<String> compared = new ArrayList<>();
        List<String> differ = new ArrayList<>();
        for (var e : mine.entrySet()) {
            if (e.getKey().contains("/jrdma_")) {
                continue;
            }
            String ref = theirs.get(e.getKey());
            if (ref == null) {
                differ.add(e.getKey() + ": ibv_devinfo has no such line");
            } else if (!ref.equals(e.getValue())) {
                differ.add(e.getKey() + ": jrdma '" + e.getValue() + "', ibv_devinfo '" + ref + "'");
            } else {
                compared.add(e.getKey());
            }
        }
        assertEquals(List.of(), differ, "jrdma devices -v vs ibv_devinfo -v");
        // Both Soft-RoCE devices, with ports, capabilities and RoCE v2 GIDs, were compared.
        for (String must : List.of("/1/state", "/1/active_mtu", "/1/link_layer", "/-/max_qp_rd_atom", "/-/atomic_cap",
                "/-/node_guid", "/-/max_srq")) {
            assertTrue(compared.stream().anyMatch(k -> k.endsWith(must)), must + " compared: " + compared);
        }
        assertTrue(compared.stream().anyMatch(k -> k.contains("/GID[")), "GIDs compared: " + compared);
        System.out.println("DevicesMatchIbvDevinfoTest: " + compared.size() + " fields agree");
    }

    /**
     * What {@link DeviceInfo#has} says of the capabilities read from device_cap_flags agrees with
     * the flag names ibv_devinfo -v lists, and SRQ and UD multicast with its max_srq and max_mcast_grp.
     */
    @Test
    void capabilitiesAgreeWithIbvDevinfosFlags() throws Exception {
        for (DeviceInfo d : Rdma.devices()) {
            Process p = new ProcessBuilder("ibv_devinfo", "-v", "-d", d.name()).redirectErrorStream(true).start();
            String reference = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            List<String> lines = reference.lines().map(String::strip).toList();
            Map<String, String> values = parse(reference);
            Map<Capability, Boolean> theirs = new java.util.EnumMap<>(Capability.class);
            theirs.put(Capability.XRC, lines.contains("XRC"));
            theirs.put(Capability.MEMORY_WINDOW_TYPE_1, lines.contains("MEM_WINDOW"));
            theirs.put(Capability.MEMORY_WINDOW_TYPE_2A, lines.contains("MEM_WINDOW_TYPE_2A"));
            theirs.put(Capability.MEMORY_WINDOW_TYPE_2B, lines.contains("MEM_WINDOW_TYPE_2B"));
            theirs.put(Capability.SRQ, Integer.parseInt(values.get(d.name() + "/-/max_srq")) > 0);
            theirs.put(Capability.UD_MULTICAST, Integer.parseInt(values.get(d.name() + "/-/max_mcast_grp")) > 0);
            for (var e : theirs.entrySet()) {
                assertEquals(e.getValue(), d.has(e.getKey()), d.name() + " " + e.getKey() + " (" + e.getKey().source()
                        + ") as ibv_devinfo -v says:\n" + reference);
            }
            System.out.println("DevicesMatchIbvDevinfoTest: " + d.name() + " has " + d.capabilities());
        }
    }

    /** With devices present, asking for one that is not there is an error naming it and those that are. */
    @Test
    void anAbsentDeviceAmongRealOnesIsAnError() {
        CommandRun r = CommandRun.of("devices", "-d", "no_such_dev0");
        assertEquals(1, r.code(), r.out());
        assertTrue(r.err().startsWith("jrdma devices: device no_such_dev0 not found (there are "), r.err());
        assertTrue(r.err().contains("rxe0"), r.err());
        assertEquals("", r.out());
        List<String> names = Rdma.devices().stream().map(DeviceInfo::name).toList();
        assertTrue(names.contains("rxe0") && names.contains("rxe1"), "Rdma.devices() lists the VM's devices: " + names);
    }
}

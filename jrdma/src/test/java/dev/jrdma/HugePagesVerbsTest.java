package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The pool in huge pages on rxe: the VM's kernel is given some (vm.nr_hugepages, the VM's own),
 * the pool's chunk lands in them (its mapping's KernelPageSize is 2048 kB), and a peer on the
 * other device writes into a region of it.
 */
@Tag("verbs")
class HugePagesVerbsTest {
    @Test
    void thePoolsChunksAreHugePagesThatPeersReach() throws Exception {
        if (System.getenv("JRDMA_VM") != null) {
            Files.writeString(Path.of("/proc/sys/vm/nr_hugepages"), "16");   // this VM's kernel only
        }
        Transport t = Transport.verbs();
        try (Rdma server = t.server().hugePages(true).build(); Rdma client = t.client().build()) {
            LocalRegion target = server.allocate(4096);
            assertTrue(server.hugePagesInUse(), "the pool got huge pages");
            assertEquals("2048 kB", kernelPageSize(target.address()), "the region's mapping");
            RdmaServer l = server.listen(t.nextServerAddress(), c -> { });
            try (Connection c = client.connect(l.address())) {
                LocalRegion buf = client.allocate(4096);
                buf.segment().fill((byte) 0x2d);
                c.writeSync(buf, RemoteRegion.fromDescriptor(target.toRemote().toDescriptor()));
                assertEquals(0x2d, target.segment().get(ValueLayout.JAVA_BYTE, 4095));
            }
        }
    }

    /** KernelPageSize of the mapping of /proc/self/smaps that holds {@code address}. */
    private static String kernelPageSize(long address) throws Exception {
        boolean in = false;
        for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
            if (line.matches("^[0-9a-f]+-[0-9a-f]+ .*")) {
                String[] range = line.substring(0, line.indexOf(' ')).split("-");
                in = Long.compareUnsigned(address, Long.parseUnsignedLong(range[0], 16)) >= 0
                        && Long.compareUnsigned(address, Long.parseUnsignedLong(range[1], 16)) < 0;
            } else if (in && line.startsWith("KernelPageSize:")) {
                return line.substring("KernelPageSize:".length()).trim();
            }
        }
        return "not mapped";
    }
}

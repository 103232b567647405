package dev.jrdma.collective;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Rdma;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * rdma_lib's demo on real verbs with four members: the server on the first device of the VM's
 * group (softroce-vm --group 4) and three clients, each on a device of its own.
 */
@Tag("verbs")
class RdmaLibVerbsTest {
    @Test
    void theServerWithThreeClientsDemoOnFourDevices() throws Exception {
        List<String> devices = List.of(PeerGroupVerbsTest.env("JRDMA_VM_GROUP_DEVS").split(","));
        List<String> ips = List.of(PeerGroupVerbsTest.env("JRDMA_VM_GROUP_IPS").split(","));
        assertTrue(devices.size() >= 4 && ips.size() == devices.size(), "four devices in the VM's group: " + devices);
        List<Rdma> rdmas = new ArrayList<>();
        try {
            for (int r = 0; r < 4; r++) {
                rdmas.add(Rdma.builder().provider("verbs").device(devices.get(r)).build());
            }
            RdmaLibTest.serverWithClients(rdmas.get(0), ips.get(0), 9700 + (int) (ProcessHandle.current().pid() % 200),
                    rdmas.subList(1, 4), ips.subList(1, 4));
        } finally {
            rdmas.forEach(Rdma::close);
        }
    }
}

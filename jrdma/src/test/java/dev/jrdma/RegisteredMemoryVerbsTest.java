package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.exceptions.UnsupportedCapabilityException;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * {@link RegisteredMemoryConformance} on real verbs: Soft-RoCE in the VM (or a real NIC), where
 * {@code toRemoteFor} binds type 2B memory windows; and the same call on a device taken as
 * having none ({@code -Djrdma.verbs.memoryWindows=false}), refused by name.
 */
@org.junit.jupiter.api.Tag("verbs")
class RegisteredMemoryVerbsTest extends RegisteredMemoryConformance {
    @Override
    protected Transport transport() {
        return Transport.verbs();
    }

    @Test
    void withoutMemoryWindowsToRemoteForIsRefusedNamingTheDevice() throws Exception {
        System.setProperty("jrdma.verbs.memoryWindows", "false");
        TestPair p;
        try {
            p = TestPair.open(transport(), CompletionMode.ADAPTIVE);
        } finally {
            System.clearProperty("jrdma.verbs.memoryWindows");
        }
        try (p) {
            Connection toFirst = p.accepted().poll(30, TimeUnit.SECONDS);
            assertNotNull(toFirst);
            LocalRegion target = p.server().allocate(4096);
            UnsupportedCapabilityException e = assertThrows(UnsupportedCapabilityException.class,
                    () -> target.toRemoteFor(toFirst));
            assertEquals("a registration for one connection", e.capability());
            assertTrue(e.getMessage().contains(p.server().deviceName()), e.getMessage());
        }
    }
}

package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * RLIMIT_MEMLOCK too low for what is registered: a process without CAP_IPC_LOCK (dropped with
 * setpriv) and a 256 KiB limit (prlimit) is told which limit, how much of it is used, and how to
 * raise it: at build for a memory budget, and when the pool's first chunk does not fit.
 */
@Tag("verbs")
class MemlockVerbsTest {
    @Test
    void aLimitTooLowIsNamedWithWhatToRaise() throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process child = new ProcessBuilder("setpriv", "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock", "--",
                "prlimit", "--memlock=262144:262144", "--",
                java, "--enable-native-access=ALL-UNNAMED", "-cp", VerbsTestAddresses.childClassPath(),
                MemlockChildMain.class.getName(), VerbsTestAddresses.serverDevice())
                .redirectErrorStream(true).start();
        List<String> lines = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                lines.add(line);
            }
        }
        assertTrue(child.waitFor(120, TimeUnit.SECONDS), "the child ended");
        assertEquals(0, child.exitValue(), String.join("\n", lines));
        String budget = lines.stream().filter(l -> l.startsWith("budget: ")).findFirst().orElse("none: " + lines);
        assertTrue(budget.contains("RdmaException") && budget.contains("RLIMIT_MEMLOCK is 262144 bytes")
                && budget.contains("ulimit -l") && budget.contains(VerbsTestAddresses.serverDevice()), budget);
        String allocate = lines.stream().filter(l -> l.startsWith("allocate: ")).findFirst().orElse("none: " + lines);
        assertTrue(allocate.contains("ENOMEM") && allocate.contains("RLIMIT_MEMLOCK is 262144 bytes")
                && allocate.contains("LimitMEMLOCK"), allocate);
        assertTrue(lines.contains("done"), String.join("\n", lines));
    }
}

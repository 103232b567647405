package dev.jrdma.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Rdma;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * {@code jrdma devices} as a modular application runs it: both jars (here their class
 * directories, read as exploded modules) on the module path, started with {@code -m}. Named
 * modules ignore META-INF/services, so this is where a provider missing from module-info's
 * {@code provides} shows; and the native-access flag then names the module, not ALL-UNNAMED.
 * (Maven's tests run on the class path: that case is {@link DevicesCommandTest}.)
 */
class ModulePathTest {
    record Run(int code, String out) {
    }

    private static Run onModulePath(String nativeAccess, String... args) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String modulePath = location(Rdma.class) + File.pathSeparator + location(Main.class);
        List<String> command = new ArrayList<>(List.of(java));
        if (nativeAccess != null) {
            command.add("--enable-native-access=" + nativeAccess);
        }
        command.addAll(List.of("-p", modulePath, "-m", "dev.jrdma.cli/" + Main.class.getName()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child JVM ended: " + out);
        return new Run(p.exitValue(), out);
    }

    private static String location(Class<?> c) throws Exception {
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }

    @Test
    void everyProviderIsFoundOnTheModulePath() throws Exception {
        assertTrue(Main.class.getModule().getName() == null, "the test itself runs on the class path");
        Run r = onModulePath("dev.jrdma", "devices");
        assertEquals(0, r.code(), r.out());
        for (String provider : List.of("shm", "tcp", "verbs")) {
            assertTrue(r.out().contains("\n  " + provider + ": "), provider + " is listed:\n" + r.out());
        }
        if (!java.nio.file.Files.isDirectory(Path.of("/sys/class/infiniband"))) {
            assertTrue(r.out().contains("shm: available") && r.out().contains("tcp: available"), r.out());
            assertTrue(r.out().contains("The default provider, auto, chooses shm"), r.out());
        }
    }

    @Test
    void withoutNativeAccessTheFlagNamesTheModule() throws Exception {
        Run r = onModulePath(null, "devices");
        assertEquals(0, r.code(), r.out());
        assertTrue(r.out().contains("start the JVM with --enable-native-access=dev.jrdma"), r.out());
        assertTrue(r.out().contains("verbs: unavailable"), r.out());
    }

    @Test
    void anAbsentDeviceIsAnErrorOnTheModulePathToo() throws Exception {
        Run r = onModulePath("dev.jrdma", "devices", "-d", "no_such_dev0");
        assertEquals(1, r.code(), r.out());
        assertTrue(r.out().contains("jrdma devices: device no_such_dev0 not found"), r.out());
    }
}

package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

/**
 * The module's promises, read from the compiled module-info: it exports exactly the public API
 * (everything else is free to change), and it provides every provider that META-INF/services
 * lists for the class path, so that the module path finds the same ones.
 */
class ModuleDescriptorTest {
    private static ModuleDescriptor descriptor() {
        Path classes = Path.of(Rdma.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        return ModuleFinder.of(classes).find("dev.jrdma").orElseThrow(
                () -> new AssertionError("no module dev.jrdma in " + classes)).descriptor();
    }

    @Test
    void exportsExactlyThePublicApi() {
        Set<String> exported = descriptor().exports().stream()
                .peek(e -> assertEquals(Set.of(), e.targets(), e.source() + " is exported to everyone or not at all"))
                .map(ModuleDescriptor.Exports::source).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Set.of("dev.jrdma", "dev.jrdma.collective", "dev.jrdma.device", "dev.jrdma.exceptions")),
                exported);
    }

    @Test
    void providesEveryProviderTheClassPathFinds() throws IOException {
        Path services = Path.of("src/main/resources/META-INF/services/dev.jrdma.spi.Provider");
        Set<String> listed = Files.readAllLines(services).stream().map(String::trim)
                .filter(l -> !l.isEmpty() && !l.startsWith("#")).collect(Collectors.toCollection(TreeSet::new));
        Set<String> provided = descriptor().provides().stream()
                .filter(p -> p.service().equals("dev.jrdma.spi.Provider"))
                .flatMap(p -> p.providers().stream()).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(Set.of("dev.jrdma.provider.shm.ShmProvider", "dev.jrdma.provider.tcp.TcpProvider",
                "dev.jrdma.provider.verbs.VerbsProvider"), listed);
        assertEquals(listed, provided, "module-info provides what META-INF/services lists");
    }
}

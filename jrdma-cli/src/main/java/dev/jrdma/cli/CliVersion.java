package dev.jrdma.cli;

import java.lang.module.FindException;
import java.lang.module.ModuleFinder;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.Optional;

/**
 * The version {@code jrdma --version} prints: the jar manifest's {@code Implementation-Version}
 * (the release build writes it), else the version compiled into the module descriptor (Maven
 * passes {@code --module-version}; found on the module path and in a class directory alike).
 */
final class CliVersion {
    private CliVersion() {
    }

    static String of() {
        return versionOf(Main.class, "dev.jrdma.cli");
    }

    /** The library's version, found the same way, for the rest of the --version line. */
    static String library() {
        return versionOf(dev.jrdma.Rdma.class, "dev.jrdma");
    }

    private static String versionOf(Class<?> c, String module) {
        String manifest = c.getPackage().getImplementationVersion();
        if (manifest != null) {
            return manifest;
        }
        Optional<String> v = c.getModule().getDescriptor() != null ? c.getModule().getDescriptor().rawVersion()
                : compiledDescriptorVersion(c, module);
        return v.orElse("unknown");
    }

    /** On the class path the module is unnamed, but its jar or directory still holds module-info.class. */
    private static Optional<String> compiledDescriptorVersion(Class<?> c, String module) {
        CodeSource source = c.getProtectionDomain().getCodeSource();
        if (source == null || source.getLocation() == null) {
            return Optional.empty();
        }
        try {
            return ModuleFinder.of(Path.of(source.getLocation().toURI())).find(module)
                    .flatMap(m -> m.descriptor().rawVersion());
        } catch (URISyntaxException | IllegalArgumentException | FindException e) {
            return Optional.empty();
        }
    }
}

package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * DESIGN.md's layering, checked on the library's sources: imports only point down, never up or
 * in a circle, and a provider never reaches into another's internals (shm may use tcp's public
 * types: its framing and the same-host hook). A fully qualified name in code counts as an import,
 * and is itself refused: imports say what a file depends on.
 *
 * <pre>
 *   collective → dev.jrdma (API) → engine.{admission,select,io,region}, memory, runtime → provider.{verbs,tcp,shm}
 *              → provider.verbs.ffi, spi
 *              → os (libc) → exceptions, device (plain values of what the devices are)
 * </pre>
 */
class LayeringTest {
    private static final Path SOURCES = Path.of("src/main/java/dev/jrdma");

    /** Each layer and the layers it may use (its own package is always allowed). */
    static final Map<String, Set<String>> MAY_USE = Map.ofEntries(
            Map.entry("exceptions", Set.of()),
            Map.entry("device", Set.of()),
            Map.entry("jfr", Set.of()),
            Map.entry("os", Set.of("exceptions")),
            Map.entry("spi", Set.of("os", "device", "exceptions")),
            Map.entry("provider.verbs.ffi", Set.of("os", "exceptions")),
            Map.entry("provider.verbs", Set.of("provider.verbs.ffi", "spi", "os", "device", "exceptions")),
            Map.entry("provider.tcp", Set.of("spi", "os", "device", "exceptions")),
            Map.entry("provider.shm", Set.of("provider.tcp", "spi", "os", "device", "exceptions")),
            Map.entry("memory", Set.of("jfr", "spi", "os", "device", "exceptions")),
            Map.entry("runtime", Set.of("spi", "os", "device", "exceptions")),
            Map.entry("engine.admission", Set.of("spi", "os", "exceptions")),
            Map.entry("engine.select", Set.of("spi", "exceptions")),
            Map.entry("engine.io", Set.of("runtime", "spi", "exceptions")),
            Map.entry("engine.region", Set.of()),
            Map.entry("api", Set.of("jfr", "memory", "runtime", "engine.admission", "engine.select", "engine.io", "engine.region",
                    "spi", "os", "device", "exceptions")),
            Map.entry("collective", Set.of("api", "runtime", "device", "exceptions")));

    private static final Pattern REFERENCE = Pattern.compile("(?<![\\w.])dev\\.jrdma((?:\\.[a-z]\\w*)*)\\.[A-Z*]");
    private static final Pattern IMPORT = Pattern.compile("^\\s*import\\s+(static\\s+)?[\\w.*]+\\s*;");

    @Test
    void everyPackageImportsOnlyTheLayersBelowIt() throws IOException {
        List<String> violations = new ArrayList<>();
        int files = 0;
        for (Path file : sources()) {
            files++;
            violations.addAll(violations(SOURCES.relativize(file).toString(), Files.readString(file)));
        }
        assertTrue(files > 100, "read " + files + " source files under " + SOURCES.toAbsolutePath());
        assertEquals(List.of(), violations, violations.size() + " layering violations");
    }

    @Test
    void theCheckCatchesAnUpwardImportAndAFullyQualifiedName() {
        String upward = "package dev.jrdma.provider.tcp;\nimport dev.jrdma.Connection;\nclass X {}\n";
        String sideways = "package dev.jrdma.provider.tcp;\nclass X { Object o = new dev.jrdma.provider.verbs.VerbsProvider(); }\n";
        String fqnDown = "package dev.jrdma.provider.tcp;\nclass X { void f() { dev.jrdma.os.Errno.name(1); } }\n";
        String commented = "package dev.jrdma.provider.tcp;\n/** See {@link dev.jrdma.Connection}. */\n"
                + "class X { String s = \"dev.jrdma.Rdma.x\"; // dev.jrdma.Rdma\n}\n";
        assertEquals(1, violations("provider/tcp/X.java", upward).size(), "import of the API from a provider");
        assertEquals(2, violations("provider/tcp/X.java", sideways).size(), "another provider, fully qualified");
        assertEquals(1, violations("provider/tcp/X.java", fqnDown).size(), "a fully qualified name, even downwards");
        assertEquals(List.of(), violations("provider/tcp/X.java", commented), "comments and strings are not code");
    }

    private static List<Path> sources() throws IOException {
        try (Stream<Path> s = Files.walk(SOURCES)) {
            return s.filter(p -> p.toString().endsWith(".java") && !p.endsWith("module-info.java")).sorted().toList();
        }
    }

    /** The layer of a package below dev.jrdma ("" is the API). */
    private static String layer(String subPackage) {
        return subPackage.isEmpty() ? "api" : subPackage;
    }

    static List<String> violations(String file, String source) {
        String code = withoutCommentsAndStrings(source);
        Matcher pkg = Pattern.compile("package\\s+dev\\.jrdma((?:\\.\\w+)*)\\s*;").matcher(code);
        if (!pkg.find()) {
            return List.of(file + ": no dev.jrdma package");
        }
        String own = layer(pkg.group(1).isEmpty() ? "" : pkg.group(1).substring(1));
        Set<String> allowed = MAY_USE.get(own);
        if (allowed == null) {
            return List.of(file + ": package " + own + " has no place in the layering (add it to DESIGN.md and here)");
        }
        List<String> out = new ArrayList<>();
        String[] lines = code.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            if (line.trim().startsWith("package ")) {
                continue;
            }
            boolean isImport = IMPORT.matcher(line).find();
            Matcher m = REFERENCE.matcher(line);
            while (m.find()) {
                String target = layer(m.group(1).isEmpty() ? "" : m.group(1).substring(1));
                String where = file + ":" + (i + 1);
                if (!target.equals(own) && !allowed.contains(target)) {
                    out.add(where + ": " + own + " uses " + target + " (" + line.trim() + ")");
                }
                if (!isImport) {
                    out.add(where + ": fully qualified name in code, import it (" + line.trim() + ")");
                }
            }
        }
        return out;
    }

    /** The source with comments and string/char literals blanked out, line breaks kept. */
    static String withoutCommentsAndStrings(String s) {
        StringBuilder b = new StringBuilder(s.length());
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '/' && i + 1 < s.length() && s.charAt(i + 1) == '/') {
                while (i < s.length() && s.charAt(i) != '\n') {
                    i++;
                }
            } else if (c == '/' && i + 1 < s.length() && s.charAt(i + 1) == '*') {
                int end = s.indexOf("*/", i + 2);
                end = end < 0 ? s.length() : end + 2;
                for (; i < end; i++) {
                    if (s.charAt(i) == '\n') {
                        b.append('\n');
                    }
                }
            } else if (s.startsWith("\"\"\"", i)) {
                int end = s.indexOf("\"\"\"", i + 3);
                end = end < 0 ? s.length() : end + 3;
                for (; i < end; i++) {
                    if (s.charAt(i) == '\n') {
                        b.append('\n');
                    }
                }
            } else if (c == '"' || c == '\'') {
                b.append(c);
                i++;
                while (i < s.length() && s.charAt(i) != c && s.charAt(i) != '\n') {
                    i += s.charAt(i) == '\\' ? 2 : 1;
                }
                b.append(c);
                i++;
            } else {
                b.append(c);
                i++;
            }
        }
        return b.toString();
    }
}

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
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Issue 46's sizes, as a ratchet: no source file of the library (jrdma, jrdma-netty) over
 * {@value #MAX_FILE_LINES} lines and no method over {@value #MAX_METHOD_LINES}, except those listed
 * here at the size they had when the limit came, which may only shrink. A listed one that fits
 * the limit must leave the list, so that it cannot grow back unseen.
 *
 * <p>A method is a declaration line that ends with its opening brace, up to the line that closes it
 * at the same indentation (the code's own format); lambdas and initialisers are not counted.
 */
class SizeLimitsTest {
    static final int MAX_FILE_LINES = 600;
    static final int MAX_METHOD_LINES = 60;
    private static final List<Path> ROOTS = List.of(Path.of("src/main/java"), Path.of("../jrdma-netty/src/main/java"));

    /** File (from its source root) -> the lines it had; each to be brought under the limit. */
    static final Map<String, Integer> LARGE_FILES = Map.ofEntries(
            Map.entry("dev/jrdma/Rdma.java", 973),
            Map.entry("dev/jrdma/Connection.java", 1129),
            Map.entry("dev/jrdma/provider/tcp/TcpResponder.java", 781),
            Map.entry("dev/jrdma/provider/tcp/TcpQueuePair.java", 772),
            Map.entry("dev/jrdma/provider/verbs/VerbsDatagramQueuePair.java", 663),
            Map.entry("dev/jrdma/ConnectionLife.java", 662),
            Map.entry("dev/jrdma/ConnectionConfig.java", 646),
            Map.entry("dev/jrdma/provider/verbs/ffi/LibIbverbs.java", 623),
            Map.entry("dev/jrdma/provider/tcp/TcpRequester.java", 615));

    /** "file:name" -> the lines the method had. */
    static final Map<String, Integer> LONG_METHODS = Map.ofEntries(
            Map.entry("dev/jrdma/provider/tcp/TcpResponder.java:receive", 78),
            Map.entry("dev/jrdma/collective/GroupRendezvous.java:host", 74),
            Map.entry("dev/jrdma/provider/tcp/TcpDatagramQueuePair.java:join", 67),
            Map.entry("dev/jrdma/provider/shm/ShmRendezvous.java:drain", 66),
            Map.entry("dev/jrdma/provider/tcp/TcpQueuePair.java:progress", 66),
            Map.entry("dev/jrdma/provider/verbs/VerbsDatagramQueuePair.java:onEvent", 63));

    private static final Pattern DECLARATION = Pattern.compile("^( +)(?!(?:if|for|while|switch|catch|try|else|do|synchronized"
            + "|return|new|throw)\\b)[\\w<>\\[\\],.? @]+\\s+(\\w+)\\s*\\([^;]*\\{\\s*$");

    @Test
    void noFileOrMethodGrowsPastTheLimitOrPastWhatItWas() throws IOException {
        Map<String, Integer> files = new TreeMap<>();
        Map<String, Integer> methods = new TreeMap<>();
        measure(files, methods);
        assertTrue(files.size() > 100, "read " + files.size() + " files under " + ROOTS);
        List<String> wrong = new ArrayList<>();
        files.forEach((f, n) -> check(wrong, "file " + f, n, LARGE_FILES.get(f), MAX_FILE_LINES));
        methods.forEach((m, n) -> check(wrong, "method " + m, n, LONG_METHODS.get(m), MAX_METHOD_LINES));
        for (String f : LARGE_FILES.keySet()) {
            if (!files.containsKey(f)) {
                wrong.add("file " + f + " is listed but not there: take it off LARGE_FILES");
            }
        }
        for (String m : LONG_METHODS.keySet()) {
            if (!methods.containsKey(m)) {
                wrong.add("method " + m + " is listed but fits now (or is gone): take it off LONG_METHODS");
            }
        }
        assertEquals(List.of(), wrong);
    }

    private static void check(List<String> wrong, String what, int lines, Integer listed, int limit) {
        if (listed == null && lines > limit) {
            wrong.add(what + " has " + lines + " lines, over the limit of " + limit);
        } else if (listed != null && lines > listed) {
            wrong.add(what + " has " + lines + " lines, more than the " + listed + " it is allowed until it is split");
        } else if (listed != null && lines <= limit && what.startsWith("file")) {
            wrong.add(what + " fits the limit now (" + lines + " lines): take it off LARGE_FILES");
        }
    }

    private static void measure(Map<String, Integer> files, Map<String, Integer> methods) throws IOException {
        for (Path root : ROOTS) {
            try (Stream<Path> s = Files.walk(root)) {
                for (Path p : s.filter(x -> x.toString().endsWith(".java")).sorted().toList()) {
                    String name = root.relativize(p).toString().replace('\\', '/');
                    List<String> lines = Files.readAllLines(p);
                    files.put(name, lines.size());
                    longMethods(name, lines, methods);
                }
            }
        }
    }

    /** Methods of over {@value #MAX_METHOD_LINES} lines (the longest of a name, for overloads). */
    static void longMethods(String file, List<String> lines, Map<String, Integer> into) {
        for (int i = 0; i < lines.size(); i++) {
            Matcher m = DECLARATION.matcher(lines.get(i));
            if (!m.find()) {
                continue;
            }
            String close = m.group(1) + "}";
            int j = i + 1;
            while (j < lines.size() && !lines.get(j).equals(close)) {
                j++;
            }
            int length = j - i + 1;
            if (j < lines.size() && length > MAX_METHOD_LINES) {
                into.merge(file + ":" + m.group(2), length, Math::max);
            }
        }
    }

    @Test
    void theMethodCountFindsADeclarationAndItsClosingBraceOnly() {
        List<String> src = new ArrayList<>();
        src.add("    private int longOne(int a) {");
        for (int i = 0; i < 61; i++) {
            src.add("        if (a > " + i + ") {");
            src.add("        }");
        }
        src.add("    }");
        src.add("    void shortOne() {");
        src.add("    }");
        Map<String, Integer> found = new TreeMap<>();
        longMethods("X.java", src, found);
        assertEquals(Map.of("X.java:longOne", 124), found);
    }
}

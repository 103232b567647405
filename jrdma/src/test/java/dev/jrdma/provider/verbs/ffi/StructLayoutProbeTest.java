package dev.jrdma.provider.verbs.ffi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.UnionLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every struct and union layout of the bindings, checked against the C compiler: a probe is
 * generated from the Java layouts themselves (so a member added in Java is checked without
 * touching this test), compiled with gcc against the installed rdma-core headers, and its
 * sizeof / offsetof / member sizes compared with the Java ones. Unlike DiSNI, which patches
 * sizes at run time, a mismatch fails the build.
 */
class StructLayoutProbeTest {
    private static final String PACKAGE = "dev.jrdma.provider.verbs.ffi";

    /** A named layout of a C type, found in a static field of a class of the bindings. */
    record CType(String cName, GroupLayout layout, String where) {
    }

    /** One check: an expression the C side evaluates, and the value Java says. */
    record Check(String label, String cExpr, long javaValue) {
    }

    static List<CType> bindingLayouts() throws IOException, URISyntaxException, ClassNotFoundException {
        Path dir = Path.of(IbvWc.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                .resolve(PACKAGE.replace('.', '/'));
        Map<String, CType> byName = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                String simple = file.getFileName().toString().replace(".class", "");
                Class<?> cls = Class.forName(PACKAGE + "." + simple);
                for (Field f : cls.getDeclaredFields()) {
                    if (!Modifier.isStatic(f.getModifiers()) || !GroupLayout.class.isAssignableFrom(f.getType())) {
                        continue;
                    }
                    f.setAccessible(true);
                    GroupLayout layout;
                    try {
                        layout = (GroupLayout) f.get(null);
                    } catch (IllegalAccessException e) {
                        throw new IllegalStateException(e);
                    }
                    if (layout.name().isEmpty()) {
                        continue;   // opaque helper layouts have no C name of their own
                    }
                    String kind = layout instanceof UnionLayout ? "union " : "struct ";
                    byName.putIfAbsent(kind + layout.name().get(),
                            new CType(kind + layout.name().get(), layout, cls.getSimpleName() + "." + f.getName()));
                }
            }
        }
        return new ArrayList<>(byName.values());
    }

    static List<Check> checks(CType type) {
        List<Check> checks = new ArrayList<>();
        checks.add(new Check(type.cName() + " size", "sizeof(" + type.cName() + ")", type.layout().byteSize()));
        walk(type, type.layout(), "", 0, checks);
        return checks;
    }

    private static void walk(CType type, GroupLayout group, String prefix, long base, List<Check> checks) {
        long offset = 0;
        for (MemoryLayout m : group.memberLayouts()) {
            long at = base + (group instanceof StructLayout ? offset : 0);
            if (!(m instanceof PaddingLayout)) {
                if (m.name().isPresent()) {
                    String path = prefix + m.name().get();
                    checks.add(new Check(type.cName() + "." + path + " offset",
                            "offsetof(" + type.cName() + ", " + path + ")", at));
                    checks.add(new Check(type.cName() + "." + path + " size",
                            "sizeof(((" + type.cName() + " *)0)->" + path + ")", m.byteSize()));
                    if (m instanceof GroupLayout inner && hasNamedMembers(inner)) {
                        walk(type, inner, path + ".", at, checks);
                    }
                } else if (m instanceof GroupLayout inner) {
                    walk(type, inner, prefix, at, checks);   // anonymous union or struct: C looks through it
                }
            }
            offset += m.byteSize();
        }
    }

    private static boolean hasNamedMembers(GroupLayout g) {
        return g.memberLayouts().stream().anyMatch(m -> m.name().isPresent() || m instanceof GroupLayout);
    }

    @Test
    void everyBindingLayoutMatchesTheCHeaders(@TempDir Path tmp) throws Exception {
        List<CType> types = bindingLayouts();
        assertTrue(types.size() >= 30, "expected the bindings' struct layouts, found only " + types.size());
        Map<String, Check> all = new LinkedHashMap<>();
        StringBuilder c = new StringBuilder("""
                #include <stddef.h>
                #include <stdio.h>
                #include <poll.h>
                #include <netinet/in.h>
                #include <infiniband/verbs.h>
                #include <rdma/rdma_cma.h>
                int main(void) {
                """);
        int i = 0;
        for (CType t : types) {
            for (Check ch : checks(t)) {
                String key = "c" + i++;
                all.put(key, ch);
                c.append("  printf(\"%s %zu\\n\", \"").append(key).append("\", (size_t) (").append(ch.cExpr())
                        .append("));\n");
            }
        }
        c.append("  return 0;\n}\n");
        Path src = tmp.resolve("probe.c");
        Files.writeString(src, c);
        Path exe = tmp.resolve("probe");
        String compile = run(tmp, "gcc", "-Wall", "-o", exe.toString(), src.toString());
        Map<String, Long> cValues = new LinkedHashMap<>();
        for (String line : run(tmp, exe.toString()).split("\n")) {
            String[] kv = line.trim().split(" ");
            cValues.put(kv[0], Long.parseLong(kv[1]));
        }
        List<String> mismatches = new ArrayList<>();
        for (var e : all.entrySet()) {
            Long cv = cValues.get(e.getKey());
            if (cv == null || cv != e.getValue().javaValue()) {
                mismatches.add(e.getValue().label() + ": C " + cv + ", Java " + e.getValue().javaValue());
            }
        }
        assertEquals(List.of(), mismatches, "layouts that disagree with gcc (" + compile + ")");
        assertEquals(all.size(), cValues.size(), "every generated check printed a value");
        System.out.println("StructLayoutProbeTest: " + types.size() + " C types, " + all.size()
                + " sizes and offsets agree with gcc");
    }

    @Test
    void probeWalkerSeesNestedAndAnonymousMembers() {
        CType wr = new CType("struct ibv_send_wr", IbvSendWr.LAYOUT, "IbvSendWr.LAYOUT");
        List<String> exprs = checks(wr).stream().map(Check::cExpr).toList();
        // anonymous union member, nested union/struct member, and the whole-struct size
        assertTrue(exprs.contains("offsetof(struct ibv_send_wr, imm_data)"), exprs.toString());
        assertTrue(exprs.contains("offsetof(struct ibv_send_wr, wr.atomic.swap)"), exprs.toString());
        assertTrue(exprs.contains("offsetof(struct ibv_send_wr, bind_mw.bind_info.mw_access_flags)"), exprs.toString());
        assertTrue(exprs.contains("sizeof(struct ibv_send_wr)"), exprs.toString());
    }

    private static String run(Path dir, String... command) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        } catch (IOException e) {
            fail("cannot run " + command[0] + " (install gcc, libibverbs-dev and librdmacm-dev): " + e.getMessage());
            throw e;
        }
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(String.join(" ", command) + " did not finish in 120 s");
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            fail(String.join(" ", command) + " exited " + p.exitValue()
                    + " (are libibverbs-dev and librdmacm-dev installed?):\n" + out);
        }
        return out;
    }
}

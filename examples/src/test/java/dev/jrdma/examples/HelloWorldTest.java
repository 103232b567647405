package dev.jrdma.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.jrdma.Rdma;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's hello world, taken from the README itself: its two Java blocks are saved as the
 * files it names and run as its shell lines say (the source launcher compiles them), the server
 * on a free port, then the client. What a newcomer pastes is what CI compiled and ran.
 */
class HelloWorldTest {
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL);

    static List<String> helloWorldBlocks(String readme) {
        int start = readme.indexOf("\n## Hello world\n");
        assertTrue(start >= 0, "the README has a Hello world section");
        int end = readme.indexOf("\n## ", start + 1);
        Matcher m = JAVA_BLOCK.matcher(readme.substring(start, end < 0 ? readme.length() : end));
        List<String> blocks = new ArrayList<>();
        while (m.find()) {
            blocks.add(m.group(1));
        }
        return blocks;
    }

    @Test
    @Timeout(180)
    void theReadmesServerAndClientCompileAndTalk(@TempDir Path dir) throws Exception {
        List<String> blocks = helloWorldBlocks(Files.readString(Path.of("../README.md")));
        assertEquals(2, blocks.size(), "a server and a client");
        assertTrue(blocks.get(0).contains("public class HelloServer {") && blocks.get(1).contains("public class HelloClient {"));
        Files.writeString(dir.resolve("HelloServer.java"), blocks.get(0));
        Files.writeString(dir.resolve("HelloClient.java"), blocks.get(1));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String lib = Path.of(Rdma.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();

        Process server = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp", lib, "HelloServer.java", "0")
                .directory(dir.toFile()).redirectErrorStream(true).start();
        try {
            BufferedReader serverOut = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String listening = serverOut.readLine();
            assertNotNull(listening, "the server printed nothing");
            Matcher port = Pattern.compile("^listening on .*:(\\d+) \\((shm|tcp|verbs)\\)$").matcher(listening);
            assertTrue(port.matches(), listening);

            Process client = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp", lib, "HelloClient.java",
                    port.group(1)).directory(dir.toFile()).redirectErrorStream(true).start();
            client.getOutputStream().close();
            String clientOut = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(client.waitFor(60, TimeUnit.SECONDS), clientOut);
            assertEquals(0, client.exitValue(), clientOut);
            assertEquals("the server answered: hello back", clientOut.strip());

            String rest = new String(server.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(server.waitFor(60, TimeUnit.SECONDS), rest);
            assertEquals(0, server.exitValue(), rest);
            assertEquals("a client wrote 12 bytes into my memory: hello, RDMA", rest.strip());
        } finally {
            server.destroyForcibly();
        }
    }
}

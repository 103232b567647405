package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import javax.tools.DocumentationTool;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The javadoc of the exported packages is complete: {@code javadoc -Xdoclint:all} on the module
 * reports nothing (every public member commented, every parameter, return value and reference
 * there). A new warning fails the build here, with the tool's own words.
 */
class JavadocTest {
    @Test
    void theExportedApiHasNoDoclintWarning(@TempDir Path out) {
        DocumentationTool javadoc = ToolProvider.getSystemDocumentationTool();
        StringWriter messages = new StringWriter();
        List<String> args = List.of("-Xdoclint:all", "-Xmaxwarns", "10000", "-quiet",
                "--module-source-path", "dev.jrdma=" + Path.of("src/main/java").toAbsolutePath(),
                "--module", "dev.jrdma", "-d", out.toString());
        DocumentationTool.DocumentationTask task = javadoc.getTask(messages, null, null, null, args, null);
        boolean ok = task.call();
        String text = messages.toString();
        assertTrue(ok, "javadoc failed:\n" + text);
        assertEquals("", text.strip(), "doclint on the exported packages:\n" + text);
        assertTrue(Files.exists(out.resolve("dev.jrdma/dev/jrdma/device/package-summary.html")),
                "the device package is documented");
        assertTrue(Files.notExists(out.resolve("dev.jrdma/dev/jrdma/spi")), "the SPI is not exported, so not documented");
    }
}

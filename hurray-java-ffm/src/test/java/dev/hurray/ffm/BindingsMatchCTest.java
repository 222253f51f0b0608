package dev.hurray.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Proves the bindings equal what the C compiler sees: compiles src/test/c/bindings_probe.c
 * with gcc (it prints sizeof/alignof/offsetof, constant values and gcc's classification of
 * every function and callback signature) and compares each fact with the Java bindings. The
 * lists of structs, constants, functions and callbacks are also read from hurray.h itself, so
 * a declaration missing from both the probe and the bindings fails too.
 */
class BindingsMatchCTest {

    private static Path root;
    private static String header;
    private static final Map<String, long[]> STRUCTS = new LinkedHashMap<>();          // size, align
    private static final Map<String, List<String[]>> FIELDS = new LinkedHashMap<>();  // name, off, size, class
    private static final Map<String, String[]> CONSTS = new LinkedHashMap<>();        // value, size, class
    private static final Map<String, List<String>> FUNCS = new LinkedHashMap<>();     // class:size, ret first
    private static final Map<String, List<String>> CALLBACKS = new LinkedHashMap<>();

    @BeforeAll
    static void runProbe() throws Exception {
        root = repoRoot();
        header = Files.readString(root.resolve("hurray.h"));
        Path probe = root.resolve("hurray-java-ffm/src/test/c/bindings_probe.c");
        Path exe = root.resolve("hurray-java-ffm/target/bindings_probe");
        Files.createDirectories(exe.getParent());
        String compiled = run(List.of(gcc(), "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I" + root,
                probe.toString(), "-o", exe.toString()));
        assertTrue(Files.isExecutable(exe), compiled);
        for (String line : run(List.of(exe.toString())).split("\n")) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "struct" -> STRUCTS.put(f[1], new long[] {Long.parseLong(f[2]), Long.parseLong(f[3])});
                case "field" -> FIELDS.computeIfAbsent(f[1], k -> new ArrayList<>())
                        .add(new String[] {f[2], f[3], f[4], f[5]});
                case "const" -> CONSTS.put(f[1], new String[] {f[2], f[3], f[4]});
                case "func" -> FUNCS.put(f[1], List.of(Arrays.copyOfRange(f, 2, f.length)));
                case "callback" -> CALLBACKS.put(f[1], List.of(Arrays.copyOfRange(f, 2, f.length)));
                case "" -> { }
                default -> fail("unexpected probe line: " + line);
            }
        }
        assertFalse(FUNCS.isEmpty(), "the probe printed no functions");
    }

    // ---------------------------------------------------------------------------------------
    // structs

    @Test
    void everyStructOfTheHeaderIsProbedAndBound() {
        assertEquals(names(Pattern.compile("^typedef struct (\\w+) \\{", Pattern.MULTILINE)), STRUCTS.keySet());
    }

    @Test
    void structLayoutsMatchGcc() throws Exception {
        for (var e : STRUCTS.entrySet()) {
            String name = e.getKey();
            Class<?> c = bindingClass(name);
            GroupLayout layout = (GroupLayout) c.getMethod("layout").invoke(null);
            assertEquals(e.getValue()[0], layout.byteSize(), name + " sizeof");
            assertEquals(e.getValue()[1], layout.byteAlignment(), name + " alignof");
            assertEquals(e.getValue()[0], (long) c.getMethod("sizeof").invoke(null), name + ".sizeof()");
            List<String[]> fields = FIELDS.getOrDefault(name, List.of());
            List<String> named = layout.memberLayouts().stream()
                    .filter(m -> !(m instanceof PaddingLayout))
                    .map(m -> m.name().orElseThrow()).toList();
            assertEquals(fields.stream().map(f -> f[0]).toList(), named, name + " fields in order");
            for (String[] f : fields) {
                String field = f[0];
                long offset = Long.parseLong(f[1]);
                long size = Long.parseLong(f[2]);
                int gccClass = Integer.parseInt(f[3]);
                String where = name + "." + field;
                assertEquals(offset, layout.byteOffset(PathElement.groupElement(field)), where + " offsetof");
                assertEquals(offset, (long) c.getMethod(field + "$offset").invoke(null), where + "$offset()");
                MemoryLayout fl = layout.select(PathElement.groupElement(field));
                assertEquals(size, fl.byteSize(), where + " sizeof");
                MemoryLayout accessorLayout = (MemoryLayout) c.getMethod(field + "$layout").invoke(null);
                assertEquals(fl, accessorLayout, where + "$layout()");
                Class<?> expected = carrier(gccClass, size);
                if (fl instanceof ValueLayout vl) {
                    assertEquals(expected, vl.carrier(), where + " carrier");
                    Method getter = c.getMethod(field, MemorySegment.class);
                    assertEquals(expected, getter.getReturnType(), where + " getter");
                    c.getMethod(field, MemorySegment.class, expected);
                } else {
                    assertEquals(MemorySegment.class, expected, where + " (struct by value)");
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // constants

    @Test
    void everyConstantOfTheHeaderIsProbedAndBound() {
        Set<String> defined = names(Pattern.compile("^#define (\\w+)[ \\t]+\\S", Pattern.MULTILINE));
        assertEquals(defined, CONSTS.keySet());
    }

    @Test
    void constantValuesAndTypesMatchGcc() throws Exception {
        for (var e : CONSTS.entrySet()) {
            String name = e.getKey();
            Method m = hurray_h.class.getMethod(name);
            assertTrue(Modifier.isStatic(m.getModifiers()), name);
            int size = Integer.parseInt(e.getValue()[1]);
            int gccClass = Integer.parseInt(e.getValue()[2]);
            Class<?> expected = carrier(gccClass, size);
            assertEquals(expected, m.getReturnType(), name + " Java type");
            Object value = m.invoke(null);
            if (expected == double.class || expected == float.class) {
                assertEquals(Double.parseDouble(e.getValue()[0]), ((Number) value).doubleValue(), name);
            } else {
                assertEquals(Long.parseLong(e.getValue()[0]), ((Number) value).longValue(), name);
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // functions

    @Test
    void everyFunctionOfTheHeaderIsProbedAndBound() {
        Set<String> declared = names(Pattern.compile(
                "^(?!\\s*//)[A-Za-z_][\\w \\t*]*?\\b(hurray_\\w+)\\s*\\(", Pattern.MULTILINE));
        assertEquals(declared, FUNCS.keySet(), "functions declared in hurray.h vs probed");
        Set<String> bound = Arrays.stream(hurray_h.class.getDeclaredMethods())
                .filter(m -> Modifier.isPublic(m.getModifiers()) && m.getName().startsWith("hurray_")
                        && !m.getName().contains("$"))
                .map(Method::getName).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(declared), bound, "functions declared in hurray.h vs hurray_h methods");
    }

    @Test
    void functionCarriersMatchGcc() throws Exception {
        for (var e : FUNCS.entrySet()) {
            String name = e.getKey();
            MethodType expected = methodType(e.getValue(), name);
            FunctionDescriptor fd = (FunctionDescriptor) hurray_h.class.getMethod(name + "$descriptor").invoke(null);
            assertEquals(expected, fd.toMethodType(), name + " descriptor");
            Method m = hurray_h.class.getMethod(name, expected.parameterArray());
            assertEquals(expected.returnType(), m.getReturnType(), name + " return");
        }
    }

    @Test
    void functionHandlesMatchTheDescriptors() throws Exception {
        // Resolves every downcall: each symbol exists in the loaded library with this type.
        for (String name : FUNCS.keySet()) {
            FunctionDescriptor fd = (FunctionDescriptor) hurray_h.class.getMethod(name + "$descriptor").invoke(null);
            MethodHandle mh = (MethodHandle) hurray_h.class.getMethod(name + "$handle").invoke(null);
            assertEquals(fd.toMethodType(), mh.type(), name);
            MemorySegment addr = (MemorySegment) hurray_h.class.getMethod(name + "$address").invoke(null);
            assertFalse(addr.equals(MemorySegment.NULL), name);
        }
    }

    // ---------------------------------------------------------------------------------------
    // callbacks

    @Test
    void everyCallbackTypedefIsProbedAndBound() {
        assertEquals(names(Pattern.compile("^typedef [^;(]*\\(\\*(\\w+)\\)\\s*\\(", Pattern.MULTILINE)),
                CALLBACKS.keySet());
    }

    @Test
    void callbackCarriersMatchGcc() throws Exception {
        for (var e : CALLBACKS.entrySet()) {
            String name = e.getKey();
            MethodType expected = methodType(e.getValue(), name);
            Class<?> c = bindingClass(name);
            FunctionDescriptor fd = (FunctionDescriptor) c.getMethod("descriptor").invoke(null);
            assertEquals(expected, fd.toMethodType(), name + " descriptor");
            Class<?> fi = Class.forName(c.getName() + "$Function");
            Method apply = fi.getMethod("apply", expected.parameterArray());
            assertEquals(expected.returnType(), apply.getReturnType(), name + ".Function.apply");
            List<Class<?>> invokeParams = new ArrayList<>(expected.parameterList());
            invokeParams.add(0, MemorySegment.class);
            Method invoke = c.getMethod("invoke", invokeParams.toArray(Class<?>[]::new));
            assertEquals(expected.returnType(), invoke.getReturnType(), name + ".invoke");
            assertEquals(AddressLayout.class, hurray_h.class.getField(name).getType(), name + " typedef layout");
        }
    }

    // ---------------------------------------------------------------------------------------

    /** gcc's __builtin_classify_type plus sizeof, mapped to the FFM carrier. */
    private static Class<?> carrier(int gccClass, long size) {
        return switch (gccClass) {
            case 1, 2, 3 -> switch ((int) size) {
                case 1 -> byte.class;
                case 2 -> short.class;
                case 4 -> int.class;
                case 8 -> long.class;
                default -> throw new AssertionError("integer of size " + size);
            };
            case 4 -> boolean.class;
            case 5, 12 -> MemorySegment.class;
            case 8 -> size == 4 ? float.class : double.class;
            default -> throw new AssertionError("unexpected gcc type class " + gccClass);
        };
    }

    private static MethodType methodType(List<String> kinds, String name) {
        Class<?> ret = kinds.get(0).equals("0:0") ? void.class : kind(kinds.get(0));
        List<Class<?>> params = kinds.subList(1, kinds.size()).stream().<Class<?>>map(BindingsMatchCTest::kind).toList();
        return MethodType.methodType(ret, params);
    }

    private static Class<?> kind(String classAndSize) {
        String[] p = classAndSize.split(":");
        return carrier(Integer.parseInt(p[0]), Long.parseLong(p[1]));
    }

    private static Class<?> bindingClass(String name) {
        try {
            return Class.forName("dev.hurray.ffm." + name);
        } catch (ClassNotFoundException e) {
            throw new AssertionError("no binding class dev.hurray.ffm." + name + " for the header's " + name, e);
        }
    }

    private static Set<String> names(Pattern p) {
        Set<String> out = new TreeSet<>();
        Matcher m = p.matcher(header);
        while (m.find()) {
            if (!m.group(1).equals("HURRAY_H")) {
                out.add(m.group(1));
            }
        }
        assertFalse(out.isEmpty(), "pattern " + p + " found nothing in hurray.h");
        return out;
    }

    private static Path repoRoot() {
        Path p = Path.of("").toAbsolutePath();
        while (p != null && !Files.isRegularFile(p.resolve("hurray.h"))) {
            p = p.getParent();
        }
        if (p == null) {
            throw new AssertionError("hurray.h not found above " + Path.of("").toAbsolutePath());
        }
        return p;
    }

    private static String gcc() {
        String cc = System.getenv().getOrDefault("CC", "gcc");
        try {
            run(List.of(cc, "--version"));
        } catch (Exception e) {
            throw new AssertionError("BindingsMatchCTest needs a C compiler to compile the layout probe, and '"
                    + cc + "' could not be run (" + e.getMessage() + "). Install gcc (Debian: apt-get install gcc) "
                    + "or set CC; CI installs it in .ci/run.", e);
        }
        return cc;
    }

    private static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", cmd) + " timed out");
        }
        if (p.exitValue() != 0) {
            throw new AssertionError(String.join(" ", cmd) + " failed (" + p.exitValue() + "):\n" + out);
        }
        return out;
    }
}

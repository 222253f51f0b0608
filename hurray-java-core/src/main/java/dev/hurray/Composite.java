package dev.hurray;

import dev.hurray.internal.NativeComposite;
import dev.hurray.internal.TensorAdopters;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A composite tensor (docs/spec/descriptor.md §Composite membership): a head descriptor (name,
 * metadata, member roles) and its members in order, each a {@link Tensor} or a nested
 * composite. Use cases: a quantized weight with its scales, a sparse matrix with its index
 * tensors, a model layer of several tensors, a KV cache with its page table.
 *
 * <p>Read one with {@link Reader#nextItem()} or {@link HurrayFile#readComposite(String)}; write
 * one with {@link Writer#write(Composite.Builder)} or {@link HurrayFileWriter#add(Composite.Builder)}
 * from a {@link #builder(String) builder}.
 *
 * <p><b>Ownership.</b> The composite owns every member's memory. {@link #close()} closes every
 * member tensor (their segments then throw {@link IllegalStateException}) and frees the native
 * composite; closing a member tensor early only ends that view. Idempotent.
 *
 * <p><b>Threads.</b> Member tensors are confined to the thread that read the composite, like
 * the reader's tensors; close from that thread.
 */
public final class Composite implements AutoCloseable {
    /** One direct member: its role and exactly one of a tensor or a nested composite. */
    public record Member(String role, Tensor tensor, Composite composite) {
        /** True for a nested composite. */
        public boolean isComposite() {
            return composite != null;
        }
    }

    /** One node of a preorder walk: its slash-separated path below the root, depth and member. */
    public record Node(String path, int depth, Member member) {}

    private final TensorDescriptor head;
    private final List<Member> members;
    private final MemorySegment handle; // owned root handle, or null for a nested composite
    private final AtomicBoolean closed = new AtomicBoolean();

    private Composite(TensorDescriptor head, List<Member> members, MemorySegment handle) {
        this.head = head;
        this.members = members;
        this.handle = handle;
    }

    /** Wraps an owned native composite, taking ownership (it is destroyed on failure). */
    static Composite fromNative(MemorySegment c, TensorScope scope) throws HurrayException {
        List<Member> built = new ArrayList<>();
        try {
            return of(c, scope, c, built);
        } catch (HurrayException | RuntimeException | Error e) {
            for (Member m : built) {
                closeMember(m);
            }
            NativeComposite.destroy(c);
            throw e;
        }
    }

    private static Composite of(MemorySegment c, TensorScope scope, MemorySegment owned, List<Member> built)
            throws HurrayException {
        TensorDescriptor head = TensorDescriptor.decode(
                dev.hurray.internal.NativeDescriptor.encodedView(NativeComposite.head(c)).toArray(
                        java.lang.foreign.ValueLayout.JAVA_BYTE));
        List<Member> members = new ArrayList<>();
        for (NativeComposite.Member m : NativeComposite.members(c)) {
            Member jm = m.tensor() != null
                    ? new Member(m.role(), TensorAdopters.fromBorrowed(m.tensor(), scope), null)
                    : new Member(m.role(), null, of(m.composite(), scope, null, new ArrayList<>()));
            members.add(jm);
            built.add(jm);
        }
        return new Composite(head, Collections.unmodifiableList(members), owned);
    }

    /** The head descriptor: name, metadata and {@link TensorDescriptor#compositeMembership() roles}. */
    public TensorDescriptor head() {
        return head;
    }

    /** The composite's name (its head's), if any. */
    public Optional<String> name() {
        return head.name();
    }

    /** Direct members in order. */
    public List<Member> members() {
        requireOpen();
        return members;
    }

    /** The direct member with {@code role}. */
    public Optional<Member> member(String role) {
        requireOpen();
        return members.stream().filter(m -> m.role().equals(role)).findFirst();
    }

    /**
     * The tensor at a slash-separated {@code path} of roles ({@code "kv/cache"}).
     *
     * @throws java.util.NoSuchElementException if no tensor is there
     */
    public Tensor tensor(String path) {
        Composite c = this;
        String[] parts = path.split("/", -1);
        for (int i = 0; i < parts.length; i++) {
            Member m = c.member(parts[i]).orElseThrow(() -> new java.util.NoSuchElementException("no member " + path));
            if (i == parts.length - 1 && m.tensor() != null) {
                return m.tensor();
            }
            if (m.composite() == null) {
                break;
            }
            c = m.composite();
        }
        throw new java.util.NoSuchElementException("no tensor at " + path);
    }

    /** Every member below this composite in preorder, with its path and depth (1 = direct). */
    public List<Node> walk() {
        requireOpen();
        List<Node> out = new ArrayList<>();
        walk(this, "", 1, out);
        return out;
    }

    private static void walk(Composite c, String prefix, int depth, List<Node> out) {
        for (Member m : c.members) {
            String path = prefix.isEmpty() ? m.role() : prefix + "/" + m.role();
            out.add(new Node(path, depth, m));
            if (m.composite() != null) {
                walk(m.composite(), path, depth + 1, out);
            }
        }
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException("the composite is closed");
        }
    }

    private static void closeMember(Member m) {
        if (m.tensor() != null) {
            m.tensor().close();
        } else {
            m.composite().close();
        }
    }

    /** Closes every member, then frees the native composite (root only). Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (Member m : members) {
            closeMember(m);
        }
        if (handle != null) {
            NativeComposite.destroy(handle);
        }
    }

    @Override
    public String toString() {
        return "Composite" + name().map(n -> " \"" + n + "\"").orElse("") + walk().stream()
                .map(n -> n.path()).toList();
    }

    /** A builder of a composite to write; {@code name} is required in a container. */
    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** A builder of a nested (or unnamed) composite. */
    public static Builder builder() {
        return new Builder(null);
    }

    /**
     * Collects members (role → tensor or nested builder) to write. Roles are 1–256 UTF-8 bytes
     * without NUL or {@code /}, unique per composite; the native library checks them, and every
     * tensor's indices, before the first byte is written. Tensors are borrowed, not copied:
     * keep them open until the write returns. Not thread-safe.
     */
    public static final class Builder {
        private final String name;
        private final List<Object[]> entries = new ArrayList<>();

        private Builder(String name) {
            this.name = name;
        }

        /** Adds a tensor member. */
        public Builder add(String role, Tensor tensor) {
            entries.add(new Object[] {Objects.requireNonNull(role, "role"), Objects.requireNonNull(tensor, "tensor")});
            return this;
        }

        /** Adds a nested composite member. */
        public Builder add(String role, Builder nested) {
            if (nested == this) {
                throw new IllegalArgumentException("a composite cannot contain itself");
            }
            entries.add(new Object[] {Objects.requireNonNull(role, "role"), Objects.requireNonNull(nested, "nested")});
            return this;
        }

        /** Every tensor of the tree, for pinning during a write. */
        List<Tensor> tensors() {
            List<Tensor> out = new ArrayList<>();
            for (Object[] e : entries) {
                if (e[1] instanceof Tensor t) {
                    out.add(t);
                } else {
                    out.addAll(((Builder) e[1]).tensors());
                }
            }
            return out;
        }

        /** What a writer does with the native composite builder. */
        @FunctionalInterface
        interface NativeUse {
            void accept(MemorySegment builder) throws HurrayException;
        }

        /**
         * Pins every tensor (checking each buffer is usable for writing), builds the native
         * composite builder, hands it to {@code use}, then destroys it and unpins: the one way
         * the stream writer and the file writer write a composite.
         */
        void writeWith(NativeUse use) throws HurrayException {
            List<Tensor> pinned = new ArrayList<>();
            try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
                for (Tensor t : tensors()) {
                    t.pin();
                    pinned.add(t);
                    MemorySegment[] bufs = t.rawBuffers();
                    for (int i = 0; i < bufs.length; i++) {
                        Writer.requireUsable(bufs[i], i);
                    }
                }
                MemorySegment b = NativeComposite.builder(toSpec(), a);
                try {
                    use.accept(b);
                } finally {
                    NativeComposite.destroyBuilder(b);
                }
            } finally {
                for (Tensor t : pinned) {
                    t.unpin();
                }
            }
        }

        /** The native spec; the tensors must be pinned by the caller. */
        NativeComposite.Spec toSpec() throws HurrayException {
            List<NativeComposite.Entry> list = new ArrayList<>();
            for (Object[] e : entries) {
                String role = (String) e[0];
                if (e[1] instanceof Tensor t) {
                    MemorySegment d = t.nativeDescriptor();
                    if (d == null) {
                        d = t.descriptor().nativeHandle();
                    }
                    list.add(new NativeComposite.Entry(role, d, t.rawBuffers(), null));
                } else {
                    list.add(new NativeComposite.Entry(role, null, null, ((Builder) e[1]).toSpec()));
                }
            }
            return new NativeComposite.Spec(name, list);
        }
    }
}

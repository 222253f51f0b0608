package dev.hurray.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import dev.hurray.HurrayException;
import dev.hurray.Layout;
import dev.hurray.TensorDescriptor;
import dev.hurray.cli.io.Entry;
import java.io.IOException;

/**
 * The {@code inspect --json} fields of sparse, paged and composite tensors: {@code "layout"}
 * is then {@code "coo"}, {@code "csr"}, {@code "csc"}, {@code "bsr"} or {@code "paged"}, with
 * {@code "sparse": {"index_dtype", "nnz", "canonical", "block_shape"}},
 * {@code "paging": {"index_dtype", "page_size", "blocks", "pages"}} and
 * {@code "composite": {"depth", "index", "roles"}} where they apply. A composite's tree is its
 * head (roles) followed by its members, each listed with its depth and index.
 */
final class SparseInspect {
    private SparseInspect() {}

    /** The JSON layout name: the kind for sparse and paged layouts, else the text form. */
    static String layoutName(Entry e) {
        TensorDescriptor d = e.descriptor();
        if (d != null && (d.layout().kind().isSparse() || d.layout().kind() == Layout.Kind.PAGED)) {
            return d.layout().kind().formatName();
        }
        return e.layout();
    }

    static void write(JsonGenerator g, TensorDescriptor d) throws IOException {
        if (d == null) {
            return;
        }
        Layout l = d.layout();
        if (l.kind().isSparse()) {
            g.writeObjectFieldStart("sparse");
            g.writeStringField("index_dtype", l.indexType().orElseThrow().formatName());
            g.writeNumberField("nnz", l.nnz());
            g.writeBooleanField("canonical", l.isCanonical());
            g.writeArrayFieldStart("block_shape");
            for (int x : l.blockShape()) {
                g.writeNumber(x);
            }
            g.writeEndArray();
            g.writeEndObject();
        } else if (l.kind() == Layout.Kind.PAGED) {
            g.writeObjectFieldStart("paging");
            g.writeStringField("index_dtype", l.indexType().orElseThrow().formatName());
            g.writeNumberField("page_size", l.pageSize());
            g.writeNumberField("blocks", l.blockCount());
            g.writeNumberField("pages", l.pageCount());
            g.writeEndObject();
        }
        try {
            var m = d.compositeMembership();
            if (m.isPresent()) {
                g.writeObjectFieldStart("composite");
                g.writeNumberField("depth", m.get().depth());
                g.writeNumberField("index", m.get().index());
                g.writeArrayFieldStart("roles");
                for (String r : m.get().roles()) {
                    g.writeString(r);
                }
                g.writeEndArray();
                g.writeEndObject();
            }
        } catch (HurrayException e) {
            throw new IOException(e);
        }
    }
}

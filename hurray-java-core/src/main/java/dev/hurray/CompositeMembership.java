package dev.hurray;

import java.util.List;

/**
 * The composite-membership block of a descriptor (docs/spec/descriptor.md §Composite
 * membership). A composite is a buffer-less <em>head</em> listing one role per member,
 * followed on a stream by its members in preorder; a member records its depth and its
 * position in its parent. Nesting is limited to depth 16, a head to 1024 members.
 *
 * <p>Reading a stream tensor by tensor (the flat view) gives the head as a tensor with no
 * buffers, then each member, each with its membership.
 *
 * @param depth 0 for a top-level head, the parent's depth + 1 for a member
 * @param index position in the parent (0 at depth 0)
 * @param roles member roles of a head, in member order; empty for a plain member
 */
public record CompositeMembership(int depth, long index, List<String> roles) {
    /** Copies {@code roles}. */
    public CompositeMembership {
        roles = List.copyOf(roles);
    }

    /** True for a head (a descriptor whose members follow it). */
    public boolean isHead() {
        return !roles.isEmpty();
    }
}

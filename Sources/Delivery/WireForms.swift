/// What a server made of one published access unit for the wire formats of its readers (the
/// MPEG-TS packets of a `ts:` listener, say), made once per unit and shared by every reader
/// that wants it.
///
/// The fan-out core carries it with its `QueuedAccessUnit` (through the GOP cache, joins,
/// skips and bounds) and never looks inside: which forms exist and what they hold is the
/// server's business. Each form is found by its type, so a reader takes its own
/// (`unit.forms[TransportStreamUnit.self]`) and ignores the others. Empty, it costs nothing.
///
/// Every reader looks its form up for every access unit, so the lookup is a comparison of
/// type identities, not a dynamic cast: each form is kept tagged with its type's identity and
/// taken out with an unchecked downcast the tag vouches for. A form that is a class is kept as
/// it is; any other in a `Box` of its own type (whose field the runtime finds through the
/// box's generic metadata, looked up at each access: a class form costs no lookup and no box).
public struct WireForms: Sendable {
    @usableFromInline typealias Entry = (type: ObjectIdentifier, kept: AnyObject & Sendable)
    /// The first form added, kept in place: a server of one kind of reader makes one form a
    /// unit, and allocates no array for it.
    @usableFromInline var first: Entry?
    /// Any form after the first.
    @usableFromInline var more: [Entry] = []

    /// One form, in a class of its type's own so that the tag can stand for the cast.
    @usableFromInline final class Box<Form: Sendable>: Sendable {
        @usableFromInline let form: Form
        @usableFromInline init(_ form: Form) { self.form = form }
    }

    public init() {}

    public var isEmpty: Bool { first == nil }

    /// Adds `form`, in place of one of the same type. Inlinable, so that a server adding its
    /// form builds the `Box` of a type it knows: the box's class is found once, not looked up
    /// in the runtime's table of generic types for every access unit. A class is kept as it
    /// is, without a box (the test on its type is settled when the call is compiled for it).
    @inlinable
    public mutating func add<Form: Sendable>(_ form: Form) {
        let kept: AnyObject & Sendable = Form.self is AnyClass ? unsafeBitCast(form, to: (AnyObject & Sendable).self) : Box(form)
        let entry: Entry = (ObjectIdentifier(Form.self), kept)
        if first == nil || first?.type == entry.type { return first = entry }
        more.removeAll { $0.type == entry.type }
        more.append(entry)
    }

    /// The form of type `Form`; nil when none was made (no reader wants it, or its maker left
    /// this unit out).
    @inlinable
    public subscript<Form: Sendable>(_ type: Form.Type) -> Form? {
        guard let kept = entry(of: Form.self) else { return nil }
        // Only `add` makes entries, each tagged with the type it kept: a class as it is,
        // anything else in its own `Box`.
        if Form.self is AnyClass { return unsafeBitCast(kept, to: Form.self) }
        return unsafeDowncast(kept, to: Box<Form>.self).form
    }

    /// What was added for type `type`.
    @inlinable
    func entry(of type: Any.Type) -> (AnyObject & Sendable)? {
        let wanted = ObjectIdentifier(type)
        if let first, first.type == wanted { return first.kept }
        for entry in more where entry.type == wanted { return entry.kept }
        return nil
    }
}

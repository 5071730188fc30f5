//! A value with a note of whether it was edited since it was last stored: the attempt stores its
//! operation state after a step only when the step changed it, without keeping a copy to compare.

/// `T`, readable freely; writable only through [`Edited::edit`], which notes the change.
#[derive(Debug)]
pub(super) struct Edited<T> {
    value: T,
    edited: bool,
}

impl<T> Edited<T> {
    /// A value not stored yet (so the first [`Edited::take_edited`] says true).
    pub(super) fn unstored(value: T) -> Self {
        Self {
            value,
            edited: true,
        }
    }

    pub(super) fn get(&self) -> &T {
        &self.value
    }

    /// The value, to change it; notes that it changed.
    pub(super) fn edit(&mut self) -> &mut T {
        self.edited = true;
        &mut self.value
    }

    /// Whether it changed since the last call (or since it was made), and forgets it.
    pub(super) fn take_edited(&mut self) -> bool {
        std::mem::take(&mut self.edited)
    }

    pub(super) fn into_inner(self) -> T {
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::Edited;

    #[test]
    fn notes_edits_until_taken() {
        let mut value = Edited::unstored(1);
        assert!(value.take_edited(), "a new value is not stored yet");
        assert!(!value.take_edited());
        assert_eq!(*value.get(), 1);
        assert!(!value.take_edited(), "reading is not editing");
        *value.edit() = 2;
        assert!(value.take_edited());
        assert!(!value.take_edited());
        assert_eq!(value.into_inner(), 2);
    }
}

//! To be filled in.

#[derive(Debug, Default)]
pub struct State {}

impl State {
    pub fn shut_down(&self) {}
}

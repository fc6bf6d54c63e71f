// KillSwitch: where a test kills an apply. Every fake that changes the
// machine's files, systemd or the state directory asks it first; from the
// chosen step on nothing more reaches them — exactly what SIGKILL at that
// instant leaves behind — while the apply itself runs on in memory and its
// report is thrown away. The next apply then starts from what a killed one
// left, at every step in turn.
#pragma once

namespace mesh::fakes {

class KillSwitch {
 public:
  // The apply dies just before its step `step` (0: before the first).
  void KillAt(int step) {
    kill_at_ = step;
    steps_ = 0;
  }
  void Disarm() {
    kill_at_ = -1;
    steps_ = 0;
  }
  // Whether the next step happens.
  bool Alive() { return kill_at_ < 0 || steps_++ < kill_at_; }
  bool Killed() const { return kill_at_ >= 0 && steps_ > kill_at_; }

 private:
  int kill_at_ = -1;
  int steps_ = 0;
};

}  // namespace mesh::fakes

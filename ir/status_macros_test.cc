#include "ir/status_macros.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

absl::Status ReturnIfError(absl::Status status, int* reached) {
  LOOM_RETURN_IF_ERROR(status);
  ++*reached;
  return absl::OkStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorPassesOk) {
  int reached = 0;
  EXPECT_TRUE(ReturnIfError(absl::OkStatus(), &reached).ok());
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheError) {
  int reached = 0;
  const absl::Status status = ReturnIfError(absl::NotFoundError("no such node"), &reached);
  EXPECT_EQ(status, absl::NotFoundError("no such node"));
  EXPECT_EQ(reached, 0);
}

TEST(StatusMacrosTest, ReturnIfErrorEvaluatesOnce) {
  int calls = 0;
  auto fail = [&] {
    ++calls;
    return absl::InternalError("once");
  };
  auto propagate = [&]() -> absl::Status {
    LOOM_RETURN_IF_ERROR(fail());
    return absl::OkStatus();
  };
  EXPECT_EQ(propagate(), absl::InternalError("once"));
  EXPECT_EQ(calls, 1);
  auto succeed = [&] {
    ++calls;
    return absl::OkStatus();
  };
  auto pass = [&]() -> absl::Status {
    LOOM_RETURN_IF_ERROR(succeed());
    return absl::OkStatus();
  };
  EXPECT_TRUE(pass().ok());
  EXPECT_EQ(calls, 2);
}

// An unbraced if and else around the macro, and a StatusOr return type.
absl::StatusOr<int> Branches(bool first, absl::Status a, absl::Status b) {
  if (first)
    LOOM_RETURN_IF_ERROR(a);
  else
    LOOM_RETURN_IF_ERROR(b);
  return first ? 1 : 2;
}

TEST(StatusMacrosTest, ReturnIfErrorInUnbracedIfElse) {
  const absl::Status error = absl::InvalidArgumentError("bad");
  EXPECT_EQ(*Branches(true, absl::OkStatus(), error), 1);
  EXPECT_EQ(Branches(true, error, absl::OkStatus()).status(), error);
  EXPECT_EQ(*Branches(false, error, absl::OkStatus()), 2);
  EXPECT_EQ(Branches(false, absl::OkStatus(), error).status(), error);
}

absl::StatusOr<std::string> Name(bool ok) {
  if (!ok) return absl::NotFoundError("no name");
  return std::string("relu");
}

absl::StatusOr<std::string> Declares(bool ok) {
  LOOM_ASSIGN_OR_RETURN(std::string name, Name(ok));
  LOOM_ASSIGN_OR_RETURN(auto again, Name(ok));  // two on consecutive lines
  return name + "/" + again;
}

TEST(StatusMacrosTest, AssignOrReturnDeclares) {
  EXPECT_EQ(*Declares(true), "relu/relu");
  EXPECT_EQ(Declares(false).status(), absl::NotFoundError("no name"));
}

absl::Status Assigns(bool ok, std::string* out, std::vector<std::string>* names) {
  LOOM_ASSIGN_OR_RETURN(*out, Name(ok));
  names->resize(1);
  LOOM_ASSIGN_OR_RETURN((*names)[0], Name(ok));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnAssignsAnExistingLvalue) {
  std::string out = "unchanged";
  std::vector<std::string> names;
  EXPECT_TRUE(Assigns(true, &out, &names).ok());
  EXPECT_EQ(out, "relu");
  EXPECT_EQ(names, std::vector<std::string>{"relu"});
  out = "unchanged";
  EXPECT_EQ(Assigns(false, &out, &names), absl::NotFoundError("no name"));
  EXPECT_EQ(out, "unchanged");
}

TEST(StatusMacrosTest, AssignOrReturnEvaluatesOnce) {
  int calls = 0;
  auto count = [&]() -> absl::StatusOr<int> {
    ++calls;
    return calls;
  };
  auto use = [&]() -> absl::StatusOr<int> {
    LOOM_ASSIGN_OR_RETURN(int value, count());
    return value;
  };
  EXPECT_EQ(*use(), 1);
  EXPECT_EQ(calls, 1);
  auto fail = [&]() -> absl::StatusOr<int> {
    ++calls;
    return absl::AbortedError("stop");
  };
  auto propagate = [&]() -> absl::Status {
    LOOM_ASSIGN_OR_RETURN(int value, fail());
    (void)value;
    return absl::OkStatus();
  };
  EXPECT_EQ(propagate(), absl::AbortedError("stop"));
  EXPECT_EQ(calls, 2);
}

absl::StatusOr<std::unique_ptr<int>> MakeInt(int value) {
  if (value < 0) return absl::OutOfRangeError("negative");
  return std::make_unique<int>(value);
}

absl::StatusOr<std::unique_ptr<int>> MoveOnly(int value) {
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<int> declared, MakeInt(value));
  std::unique_ptr<int> assigned;
  LOOM_ASSIGN_OR_RETURN(assigned, MakeInt(*declared + 1));
  *assigned += *declared;
  return assigned;
}

TEST(StatusMacrosTest, AssignOrReturnMovesMoveOnlyValues) {
  absl::StatusOr<std::unique_ptr<int>> sum = MoveOnly(3);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(**sum, 7);
  EXPECT_EQ(MoveOnly(-1).status(), absl::OutOfRangeError("negative"));
}

// A comma in the expression (a template argument list and a braced list).
template <typename A, typename B>
absl::StatusOr<int> Sum(std::vector<int> values) {
  int sum = 0;
  for (int v : values) sum += v;
  return sum;
}

absl::StatusOr<int> Commas() {
  LOOM_ASSIGN_OR_RETURN(int sum, Sum<int, char>({1, 2, 3}));
  return sum;
}

TEST(StatusMacrosTest, AssignOrReturnTakesCommasInTheExpression) { EXPECT_EQ(*Commas(), 6); }

}  // namespace
}  // namespace loom

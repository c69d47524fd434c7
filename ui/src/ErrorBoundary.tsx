// What shows instead of a part of the window that failed to draw: the error, and a way on.
// Without it React empties the whole window and the user sees nothing at all.
import { Component, type ReactNode } from "react";

type Props = { area: string; children: ReactNode };
type State = { error: Error | null };

export class ErrorBoundary extends Component<Props, State> {
  state: State = { error: null };

  static getDerivedStateFromError(error: Error): State {
    return { error };
  }

  render() {
    const { error } = this.state;
    if (error === null) return this.props.children;
    return (
      <div className="error-boundary" role="alert" data-testid="error-boundary">
        <strong>The {this.props.area} failed to draw.</strong>
        <p>{error.message}</p>
        <button type="button" onClick={() => this.setState({ error: null })}>
          Try again
        </button>
      </div>
    );
  }
}

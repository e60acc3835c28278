import { render } from 'preact';

function App() {
  return <main><h1>vitrine Explorer</h1></main>;
}

render(<App />, document.getElementById('app'));
